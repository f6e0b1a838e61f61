import type { LifecycleMachineName } from '../domain/index.ts';
import { approvalEventDescriptions, approvalMachine } from './approvalMachine.ts';
import { partEventDescriptions, partMachine } from './partMachine.ts';
import { sessionEventDescriptions, sessionMachine } from './sessionMachine.ts';
import { turnEventDescriptions, turnMachine } from './turnMachine.ts';

/** The four lifecycles, in the order the docs present them. */
export const lifecycleMachines = {
  session: { machine: sessionMachine, events: sessionEventDescriptions },
  turn: { machine: turnMachine, events: turnEventDescriptions },
  part: { machine: partMachine, events: partEventDescriptions },
  approval: { machine: approvalMachine, events: approvalEventDescriptions },
} as const satisfies Record<LifecycleMachineName, unknown>;

export type { LifecycleMachineName };
export type LifecycleMachine = (typeof lifecycleMachines)[LifecycleMachineName]['machine'];
