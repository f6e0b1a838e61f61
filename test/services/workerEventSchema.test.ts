import { describe, expect, it } from 'vitest';
import { workerEventSchema } from '../../services/dispatch/workerProtocol.ts';

const turnId = 'trn_0123456789abcdef0123456789abcdef';
const partId = 'prt_0123456789abcdef0123456789abcdef';

describe('workerEventSchema: what a worker may write, keyed by type', () => {
  it('takes each kind of part start with exactly its own fields', () => {
    expect(workerEventSchema.safeParse({ type: 'part.started', turnId, partId, step: 1, kind: 'text' }).success).toBe(true);
    expect(workerEventSchema.safeParse({ type: 'part.started', turnId, partId, step: 1, kind: 'tool', toolCallId: 'call_1', toolName: 'read' }).success).toBe(true);
    // A tool part without its call, a text part with one, a kind nobody knows: refused.
    expect(workerEventSchema.safeParse({ type: 'part.started', turnId, partId, step: 1, kind: 'tool' }).success).toBe(false);
    expect(workerEventSchema.safeParse({ type: 'part.started', turnId, partId, step: 1, kind: 'text', toolCallId: 'call_1', toolName: 'read' }).success).toBe(false);
    expect(workerEventSchema.safeParse({ type: 'part.started', turnId, partId, step: 1, kind: 'image' }).success).toBe(false);
  });

  it('refuses an event of a type only the engine writes, an unknown type and an extra field, saying which', () => {
    const engineOnly = workerEventSchema.safeParse({ type: 'turn.settled', turnId });
    expect(engineOnly.success).toBe(false);
    expect(engineOnly.error!.issues[0]!.path).toEqual(['type']);
    expect(workerEventSchema.safeParse({ type: 'nope', turnId }).success).toBe(false);
    const extra = workerEventSchema.safeParse({ type: 'tool.executing', turnId, partId, toolCallId: 'call_1', ran: true });
    expect(extra.success).toBe(false);
    expect(extra.error!.issues[0]!.code).toBe('unrecognized_keys');
  });
});
