import { describe, expect, it } from 'vitest';
import { IllegalTransition } from '../../domain/index.ts';
import { type TurnEvent, turnMachine } from '../../machines/index.ts';
import { strictSend } from '../../services/index.ts';
import { drive, stateOf } from './drive.ts';

const input = { turnId: 't1' };

const toolStep: TurnEvent[] = [
  { type: 'step.started', step: 1 },
  { type: 'response.started' },
  { type: 'part.started', partId: 'p1' },
  { type: 'part.started', partId: 'p2' },
  { type: 'response.completed' },
  { type: 'tools.started', toolCallIds: ['c1'] },
  { type: 'approval.requested', approvalId: 'a1' },
  { type: 'approval.granted', approvalId: 'a1' },
  { type: 'step.finished', step: 1 },
];

describe('turn machine', () => {
  it('runs a step loop to completion and counts its steps', () => {
    const turn = drive(turnMachine, input, [
      { type: 'turn.started' },
      ...toolStep,
      { type: 'step.started', step: 2 },
      { type: 'part.started', partId: 'p3' },
      { type: 'step.finished', step: 2 },
      { type: 'turn.completed' },
    ]);
    expect(stateOf(turn)).toBe('completed');
    expect(turn.getSnapshot().status).toBe('done');
    expect(turn.getSnapshot().context.step).toBe(2);
  });

  it('rejects completing a turn that is not active', () => {
    const requested = drive(turnMachine, input, []);
    expect(() => strictSend(requested, { type: 'turn.completed' })).toThrow(IllegalTransition);

    const done = drive(turnMachine, input, [{ type: 'turn.started' }, { type: 'turn.completed' }]);
    const error = (() => {
      try {
        strictSend(done, { type: 'turn.completed' });
      } catch (caught) {
        return caught as IllegalTransition;
      }
    })();
    expect(error).toBeInstanceOf(IllegalTransition);
    expect(error?.details).toEqual({ machine: 'turn', state: 'completed', event: 'turn.completed' });
  });

  it('will not settle while a step is open', () => {
    const turn = drive(turnMachine, input, [{ type: 'turn.started' }, { type: 'step.started', step: 1 }]);
    expect(() => strictSend(turn, { type: 'turn.completed' })).toThrow(IllegalTransition);
    expect(() => strictSend(turn, { type: 'turn.failed', error: 'x' })).toThrow(IllegalTransition);
    expect(() => strictSend(turn, { type: 'step.started', step: 2 })).toThrow(IllegalTransition);
    expect(stateOf(turn)).toBe('running.requesting');
  });

  it('interrupts in two phases and closes the open step first', () => {
    const turn = drive(turnMachine, input, [
      { type: 'turn.started' },
      { type: 'step.started', step: 1 },
      { type: 'part.started', partId: 'p1' },
      { type: 'turn.interruptRequested', reason: 'user' },
    ]);
    expect(stateOf(turn)).toBe('interrupting.stepOpen');
    expect(() => strictSend(turn, { type: 'turn.interrupted', cause: 'provider' })).toThrow(IllegalTransition);
    expect(() => strictSend(turn, { type: 'turn.interruptRequested', reason: 'again' })).toThrow(IllegalTransition);
    expect(() => strictSend(turn, { type: 'step.started', step: 2 })).toThrow(IllegalTransition);
    strictSend(turn, { type: 'step.finished', step: 1 });
    strictSend(turn, { type: 'turn.interrupted', cause: 'deadline' });
    expect(stateOf(turn)).toBe('interrupted');
  });

  it('interrupts a turn no worker has picked up, and tolerates the worker starting it late', () => {
    const turn = drive(turnMachine, input, [
      { type: 'turn.interruptRequested', reason: 'user' },
      { type: 'turn.started' },
      { type: 'turn.interrupted', cause: 'provider' },
    ]);
    expect(stateOf(turn)).toBe('interrupted');
  });

  it('refuses a second response start or completion in one step', () => {
    const turn = drive(turnMachine, input, [{ type: 'turn.started' }, { type: 'step.started', step: 1 }, { type: 'response.started' }]);
    expect(() => strictSend(turn, { type: 'response.started' })).toThrow(IllegalTransition);
    strictSend(turn, { type: 'response.completed' });
    expect(() => strictSend(turn, { type: 'response.completed' })).toThrow(IllegalTransition);
    expect(() => strictSend(turn, { type: 'part.started', partId: 'late' })).toThrow(IllegalTransition);
    expect(stateOf(turn)).toBe('running.responded');
  });

  it('rejects approvals out of place', () => {
    const streaming = drive(turnMachine, input, [
      { type: 'turn.started' },
      { type: 'step.started', step: 1 },
      { type: 'part.started', partId: 'p1' },
    ]);
    expect(() => strictSend(streaming, { type: 'approval.granted', approvalId: 'a1' })).toThrow(IllegalTransition);
    expect(() => strictSend(streaming, { type: 'approval.requested', approvalId: 'a1' })).toThrow(IllegalTransition);
    expect(stateOf(streaming)).toBe('running.streaming');
  });
});
