import { type AnyActorScope, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type Snapshot, createActor } from 'xstate';

const scopes = new WeakMap<AnyStateMachine, AnyActorScope>();

/**
 * One inert scope per machine, made once. XState's standalone `transition()`
 * builds a throwaway actor for every call, and without an input each of our
 * machines' context functions throws inside it (caught by XState): a step
 * cost 20-odd µs. The lifecycle machines only `assign`, which XState applies
 * inside `machine.transition`, so a step needs no actor of its own.
 */
function scopeOf(machine: AnyStateMachine): AnyActorScope {
  let scope = scopes.get(machine);
  if (!scope) {
    // An empty input: the context functions read fields of it, and never throw on `{}`.
    const self = createActor(machine, { input: {} });
    scope = { self, id: '', sessionId: '', system: self.system, logger: () => {}, defer: () => {}, emit: () => {}, stopChild: () => {}, actionExecutor: () => {} };
    scopes.set(machine, scope);
  }
  return scope;
}

/** The snapshot after `event`: what `transition(machine, snapshot, event)[0]` returns, without an actor per call. */
export function stepMachine(machine: AnyStateMachine, snapshot: AnyMachineSnapshot, event: EventObject): AnyMachineSnapshot {
  return machine.transition(snapshot, event, scopeOf(machine)) as AnyMachineSnapshot;
}

/** The initial snapshot for `input`: what `initialTransition(machine, input)[0]` returns. */
export function startMachine(machine: AnyStateMachine, input: object): AnyMachineSnapshot {
  return machine.getInitialSnapshot(scopeOf(machine), input) as AnyMachineSnapshot;
}

/** A persisted snapshot made live again: what `createActor(machine, { snapshot })` restores. */
export function restoreMachine(machine: AnyStateMachine, persisted: Snapshot<unknown>): AnyMachineSnapshot {
  return machine.restoreSnapshot(persisted, scopeOf(machine)) as AnyMachineSnapshot;
}
