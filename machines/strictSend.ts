import type { Actor, AnyMachineSnapshot, AnyStateMachine, EventFromLogic, EventObject, StateValue } from 'xstate';
import { IllegalTransition } from '../domain/index.ts';

/** Dotted path of the active leaf states, e.g. `running.streaming`. */
export function stateName(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => (child && (typeof child === 'string' || Object.keys(child).length > 0) ? `${key}.${stateName(child)}` : key))
    .join(',');
}

/**
 * Throws `IllegalTransition` unless the machine accepts the event in this
 * snapshot. XState drops unaccepted events silently; this makes them loud.
 */
export function assertAccepts(machine: AnyStateMachine, snapshot: AnyMachineSnapshot, event: EventObject, actorId: string | null = null): void {
  if (snapshot.status !== 'active' || !snapshot.can(event)) {
    throw new IllegalTransition(machine.id, stateName(snapshot.value), event.type, actorId);
  }
}

/**
 * The only way to deliver an event to a lifecycle actor. Rejected events
 * throw `IllegalTransition` and leave the snapshot untouched.
 */
export function strictSend<M extends AnyStateMachine>(actor: Actor<M>, event: EventFromLogic<M>): void {
  assertAccepts(actor.logic, actor.getSnapshot() as AnyMachineSnapshot, event);
  actor.send(event);
}
