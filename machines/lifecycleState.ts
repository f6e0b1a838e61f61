import type { AnyStateMachine, StateValue } from 'xstate';
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

export function initialStateName(machine: AnyStateMachine, input: object): string {
  return stateName(startMachine(machine, input).value);
}
