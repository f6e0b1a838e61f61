import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ProviderAdapter, ProviderError, type ProviderEvent, type ToolExecutor } from '../../domain/index.ts';
import { openApiFixture } from '../support/apiFixture.ts';
import { rebuildFromLog } from '../support/engineFixture.ts';

const id = fc.constantFrom('a', 'b', 'c');
const eventArb: fc.Arbitrary<ProviderEvent> = fc.oneof(
  fc.record({ type: fc.constant('turn.started' as const), responseId: fc.constant('r'), model: fc.constant('m') }),
  fc.record({ type: fc.constant('segment.started' as const), segmentId: id, kind: fc.constantFrom('text' as const, 'reasoning' as const) }),
  fc.record({ type: fc.constant('text.delta' as const), segmentId: id, text: fc.string({ maxLength: 5 }) }),
  fc.record({ type: fc.constant('segment.completed' as const), segmentId: id, signature: fc.constant(null) }),
  fc.record({ type: fc.constant('toolCall.started' as const), callId: id, name: fc.constant('t') }),
  fc.record({ type: fc.constant('toolCall.inputDelta' as const), callId: id, text: fc.constant('{}') }),
  fc.record({ type: fc.constant('toolCall.ready' as const), callId: id, input: fc.constant({}) }),
  fc.record({ type: fc.constant('usage' as const), usage: fc.constant({ input: 1, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0 }) }),
  fc.record({ type: fc.constant('turn.completed' as const), stopReason: fc.constantFrom('stop' as const, 'toolCalls' as const), rawReason: fc.constant(null) }),
);
/** One model call: some events, then it ends, or breaks with a provider error. */
const callArb = fc.record({ events: fc.array(eventArb, { maxLength: 25 }), breaks: fc.boolean() });

const tools: ToolExecutor = { specs: () => [], classify: (call) => ({ kind: 'read', subject: call.name }), execute: async () => ({ output: 'ok', isError: false }) };

describe('ingestion under arbitrary provider streams (property)', () => {
  it('never crashes, always settles the turn, and keeps the read model the fold of the log', async () => {
    const endings = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(callArb, { minLength: 1, maxLength: 4 }), async (calls) => {
        let call = 0;
        const chaotic: ProviderAdapter = {
          name: 'chaos',
          tools,
          async *stream() {
            const planned = calls[call++];
            if (!planned) {
              yield { type: 'turn.started', responseId: 'end', model: 'm' };
              yield { type: 'turn.completed', stopReason: 'stop', rawReason: null };
              return;
            }
            for (const event of planned.events) yield event;
            if (planned.breaks) throw new ProviderError({ kind: 'server', message: 'boom', status: 500, retryAfterMs: null });
          },
        };
        const fx = await openApiFixture({ providers: { chaos: chaotic }, runner: { retry: { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0, jitter: 0 }, maxSteps: 6 } });
        try {
          const client = await fx.client();
          const { threadId } = await client.call('thread.create', {});
          const { turnId } = await client.call('turn.start', { threadId, input: { text: 'go' }, provider: { name: 'chaos' } });
          await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.openTurnId, { timeout: 10_000, interval: 20 }).toBeNull();
          const { thread } = await client.call('thread.get', { threadId });
          const state = thread.turns[turnId]!.state;
          expect(['completed', 'failed', 'interrupted']).toContain(state);
          endings.set(state, (endings.get(state) ?? 0) + 1);
          expect(thread.turns[turnId]!.messages[1].parts.every((part) => !part.state.startsWith('running') && part.state !== 'pending')).toBe(true);
          expect(fx.store.readView(threadId)).toEqual(rebuildFromLog(fx.store, threadId));
        } finally {
          await fx.dispose();
        }
      }),
      { numRuns: 40 },
    );
    // Not vacuous: both clean endings and failures happened.
    expect(endings.get('completed')).toBeGreaterThan(0);
    expect(endings.get('failed')).toBeGreaterThan(0);
  }, 240_000);
});
