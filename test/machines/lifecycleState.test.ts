import fc from 'fast-check';
import { type AnyStateMachine, setup } from 'xstate';
import { describe, expect, it } from 'vitest';
import { type LifecycleMachineName, lifecycleMachines } from '../../machines/index.ts';
import { type LifecycleState, advanceLifecycle, advanceStateName, initialStateName } from '../../machines/lifecycleState.ts';
import { startMachine } from '../../machines/machineStep.ts';
import { sampleEvents, sampleInputs } from './sampleEvents.ts';

const names = Object.keys(lifecycleMachines) as LifecycleMachineName[];

describe('advanceStateName: the next state by name, looked up after its first step', () => {
  for (const name of names) {
    it(`${name}: along any walk of events, the same name as stepping the machine every time`, () => {
      const machine = lifecycleMachines[name].machine;
      const events = Object.values(sampleEvents[name]);
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...events), { maxLength: 30 }), (walk) => {
          let stepped: LifecycleState<object> = { state: initialStateName(machine, sampleInputs[name]), context: startMachine(machine, sampleInputs[name]).context };
          let named = stepped.state;
          for (const event of walk) {
            stepped = advanceLifecycle(machine, stepped, event);
            named = advanceStateName(machine, { state: named, context: stepped.context }, event);
            expect(named).toBe(stepped.state);
          }
        }),
        { numRuns: 300 },
      );
    });
  }

  it('asks the machine every time where a guard decides (a state and a type do not)', () => {
    const gated = setup({ types: { context: {} as { open: boolean }, events: {} as { type: 'push' } } }).createMachine({
      id: 'gate',
      context: { open: false },
      initial: 'shut',
      states: { shut: { on: { push: { guard: ({ context }) => context.open, target: 'through' } } }, through: {} },
    }) as AnyStateMachine;
    expect(advanceStateName(gated, { state: 'shut', context: { open: false } }, { type: 'push' })).toBe('shut');
    expect(advanceStateName(gated, { state: 'shut', context: { open: true } }, { type: 'push' })).toBe('through');
  });
});
