import fc from 'fast-check';
import { type AnyMachineSnapshot, type AnyStateMachine, initialTransition, transition } from 'xstate';
import { describe, expect, it } from 'vitest';
import { lifecycleMachines, type LifecycleMachineName } from '../../machines/index.ts';
import { restoreMachine, startMachine, stepMachine } from '../../machines/machineStep.ts';
import { sampleEvents, sampleInputs } from './sampleEvents.ts';

const names = Object.keys(lifecycleMachines) as LifecycleMachineName[];
const plain = (snapshot: AnyMachineSnapshot) => ({ value: snapshot.value, context: snapshot.context, status: snapshot.status });

describe('stepping a machine without an actor per step', () => {
  for (const name of names) {
    it(`${name}: any walk of events gives what XState's transition() gives, step by step, and survives persisting`, () => {
      const machine = lifecycleMachines[name].machine;
      const events = Object.values(sampleEvents[name]);
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...events), { maxLength: 30 }), (walk) => {
          let ours = startMachine(machine, sampleInputs[name]);
          let theirs = initialTransition(machine, sampleInputs[name])[0];
          expect(plain(ours)).toEqual(plain(theirs));
          for (const event of walk) {
            // Refused events included: both leave the snapshot as it was.
            ours = stepMachine(machine, ours, event);
            theirs = transition(machine, theirs, event)[0];
            expect(plain(ours)).toEqual(plain(theirs));
          }
          expect(plain(restoreMachine(machine, (machine as AnyStateMachine).getPersistedSnapshot(ours)))).toEqual(plain(ours));
        }),
        { numRuns: 200 },
      );
    });
  }
});
