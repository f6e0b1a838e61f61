import { type AnyStateMachine, type EventFromLogic, type InputFrom, createActor } from 'xstate';
import { stateName, strictSend } from '../../services/index.ts';

/** Starts an actor and feeds it events through the strict send; returns the actor. */
export function drive<M extends AnyStateMachine>(machine: M, input: InputFrom<M>, events: EventFromLogic<M>[]) {
  const actor = createActor(machine, { input }).start();
  for (const event of events) strictSend(actor, event);
  return actor;
}

export const stateOf = (actor: { getSnapshot(): { value: import('xstate').StateValue } }) => stateName(actor.getSnapshot().value);
