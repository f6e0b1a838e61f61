import type { AnyStateMachine, AnyStateNode, StateValue } from 'xstate';
import { startMachine, stepMachine } from './machineStep.ts';
import { stateName } from './strictSend.ts';

function parseStateName(name: string): StateValue {
  const [head, ...rest] = name.split('.');
  return rest.length === 0 ? head! : { [head!]: parseStateName(rest.join('.')) };
}

export interface LifecycleState<C extends object> {
  state: string;
  context: C;
}

/**
 * The machine's own answer to "what follows?", for folds that keep only a
 * state name and a context: the read model never re-implements a chart.
 */
export function advanceLifecycle<C extends object>(machine: AnyStateMachine, current: LifecycleState<C>, event: { type: string }): LifecycleState<C> {
  const snapshot = machine.resolveState({ value: parseStateName(current.state), context: current.context });
  const next = stepMachine(machine, snapshot, event);
  return { state: stateName(next.value), context: next.context as C };
}

/** Whether a guard, an eventless or a delayed transition appears anywhere in the chart: with none, a state and an event's type alone decide the next state. */
function decidedByNameAlone(node: AnyStateNode): boolean {
  for (const definitions of node.transitions.values()) if (definitions.some((definition) => definition.guard !== undefined)) return false;
  if ((node.always?.length ?? 0) > 0 || node.after.length > 0) return false;
  return Object.values(node.states).every((child) => decidedByNameAlone(child as AnyStateNode));
}

/** Per machine: the next state's name by `state\nevent type`, or `null` for a machine whose next state can depend on more. */
const nextNames = new WeakMap<AnyStateMachine, Map<string, string> | null>();

/**
 * `advanceLifecycle(...).state`, for a fold that keeps only the state's
 * name: the machine is stepped once per state and event type, then looked
 * up (the client and the worker fold every event of every turn they follow).
 */
export function advanceStateName<C extends object>(machine: AnyStateMachine, current: LifecycleState<C>, event: { type: string }): string {
  let names = nextNames.get(machine);
  if (names === undefined) {
    names = decidedByNameAlone(machine.root) ? new Map() : null;
    nextNames.set(machine, names);
  }
  if (names === null) return advanceLifecycle(machine, current, event).state;
  const key = `${current.state}\n${event.type}`;
  let next = names.get(key);
  if (next === undefined) {
    next = advanceLifecycle(machine, current, event).state;
    names.set(key, next);
  }
  return next;
}

export function initialStateName(machine: AnyStateMachine, input: object): string {
  return stateName(startMachine(machine, input).value);
}
