import { describe, expect, it } from 'vitest';
import { IllegalTransition } from '../../domain/index.ts';
import { partMachine } from '../../machines/index.ts';
import { strictSend } from '../../services/index.ts';
import { drive, stateOf } from './drive.ts';

describe('part machine', () => {
  it('streams a text part to completion', () => {
    const part = drive(partMachine, { partId: 'p1', kind: 'text' }, [
      { type: 'content.started' },
      { type: 'content.delta', text: 'Hel' },
      { type: 'content.delta', text: 'lo' },
      { type: 'content.completed' },
    ]);
    expect(stateOf(part)).toBe('completed');
  });

  it('rejects a text delta after its part completed', () => {
    const part = drive(partMachine, { partId: 'p1', kind: 'text' }, [{ type: 'content.started' }, { type: 'content.completed' }]);
    const before = part.getPersistedSnapshot();
    expect(() => strictSend(part, { type: 'content.delta', text: 'late' })).toThrow(IllegalTransition);
    expect(part.getPersistedSnapshot()).toEqual(before);
  });

  it('takes a tool call through input, approval, execution and result', () => {
    const part = drive(partMachine, { partId: 'p2', kind: 'tool' }, [
      { type: 'tool.started', toolCallId: 'c1', toolName: 'bash' },
      { type: 'tool.inputDelta', text: '{"cmd":' },
      { type: 'tool.inputDelta', text: '"ls"}' },
      { type: 'tool.inputReady' },
      { type: 'approval.requested', approvalId: 'a1' },
      { type: 'approval.granted', approvalId: 'a1' },
    ]);
    expect(stateOf(part)).toBe('running.tool.inputReady');
    strictSend(part, { type: 'tool.executing' });
    strictSend(part, { type: 'tool.result' });
    expect(stateOf(part)).toBe('completed');
  });

  it('rejects a tool result without its call', () => {
    const pending = drive(partMachine, { partId: 'p2', kind: 'tool' }, []);
    expect(() => strictSend(pending, { type: 'tool.result' })).toThrow(IllegalTransition);
    const streamingInput = drive(partMachine, { partId: 'p2', kind: 'tool' }, [{ type: 'tool.started', toolCallId: 'c1', toolName: 'bash' }]);
    expect(() => strictSend(streamingInput, { type: 'tool.result' })).toThrow(IllegalTransition);
    const ready = drive(partMachine, { partId: 'p2', kind: 'tool' }, [
      { type: 'tool.started', toolCallId: 'c1', toolName: 'bash' },
      { type: 'tool.inputReady' },
    ]);
    expect(() => strictSend(ready, { type: 'tool.result' })).toThrow(IllegalTransition);
    expect(stateOf(ready)).toBe('running.tool.inputReady');
  });

  it('keeps text and tool shapes apart', () => {
    const text = drive(partMachine, { partId: 'p1', kind: 'text' }, [{ type: 'content.started' }]);
    expect(() => strictSend(text, { type: 'tool.inputDelta', text: '{' })).toThrow(IllegalTransition);
    const tool = drive(partMachine, { partId: 'p2', kind: 'tool' }, [{ type: 'tool.started', toolCallId: 'c1', toolName: 'bash' }]);
    expect(() => strictSend(tool, { type: 'content.delta', text: 'x' })).toThrow(IllegalTransition);
  });

  it('ends a refused call in error and an open part on interrupt', () => {
    const refused = drive(partMachine, { partId: 'p2', kind: 'tool' }, [
      { type: 'tool.started', toolCallId: 'c1', toolName: 'bash' },
      { type: 'tool.inputReady' },
      { type: 'approval.requested', approvalId: 'a1' },
      { type: 'approval.denied', approvalId: 'a1' },
    ]);
    expect(stateOf(refused)).toBe('error');
    const open = drive(partMachine, { partId: 'p1', kind: 'reasoning' }, [
      { type: 'content.started' },
      { type: 'part.interrupted', reason: 'user' },
    ]);
    expect(stateOf(open)).toBe('interrupted');
  });
});
