import { describe, expect, it } from 'vitest';
import { IllegalTransition } from '../../domain/index.ts';
import { approvalMachine } from '../../machines/index.ts';
import { strictSend } from '../../services/index.ts';
import { drive, stateOf } from './drive.ts';

const input = { approvalId: 'a1' };

describe('approval machine', () => {
  it('records the decision, then the provider consuming it', () => {
    const approval = drive(approvalMachine, input, [{ type: 'approval.granted', by: 'alice' }]);
    expect(stateOf(approval)).toBe('approved');
    expect(approval.getSnapshot().status).toBe('active');
    strictSend(approval, { type: 'approval.consumed' });
    expect(stateOf(approval)).toBe('consumed');
    expect(approval.getSnapshot().status).toBe('done');
  });

  it('rejects an approval answered twice, either way', () => {
    const approval = drive(approvalMachine, input, [{ type: 'approval.granted', by: 'alice' }]);
    const before = approval.getPersistedSnapshot();
    expect(() => strictSend(approval, { type: 'approval.granted', by: 'bob' })).toThrow(IllegalTransition);
    expect(() => strictSend(approval, { type: 'approval.denied', by: 'bob' })).toThrow(IllegalTransition);
    expect(approval.getPersistedSnapshot()).toEqual(before);
  });

  it('marks a decision that never reached the provider as undelivered', () => {
    const approval = drive(approvalMachine, input, [
      { type: 'approval.denied', by: 'alice' },
      { type: 'approval.undelivered', reason: 'turn interrupted' },
    ]);
    expect(stateOf(approval)).toBe('undelivered');
  });

  it('cannot be answered once cancelled or expired', () => {
    for (const closing of [{ type: 'approval.cancelled', reason: 'turn failed' }, { type: 'approval.expired' }] as const) {
      const approval = drive(approvalMachine, input, [closing]);
      expect(() => strictSend(approval, { type: 'approval.granted', by: 'alice' })).toThrow(IllegalTransition);
      expect(() => strictSend(approval, { type: 'approval.consumed' })).toThrow(IllegalTransition);
    }
  });
});
