import { afterAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../adapters/providers/anthropicProvider.ts';
import { type RecordedStreamServer, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { decodeLiveBatch } from '../../protocol/liveBatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

/** An Anthropic stream of one text block arriving as `count` deltas of `size` characters. */
function longReply(count: number, size: number): { chunks: string[]; text: string } {
  const deltas = Array.from({ length: count }, (_, i) => String(i % 10).repeat(size));
  const chunks = [
    { type: 'message_start', message: { id: 'msg_long', type: 'message', role: 'assistant', content: [], model: 'claude-test', stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ...deltas.map((text) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2_500 } },
    { type: 'message_stop' },
  ].map((chunk) => JSON.stringify(chunk));
  return { chunks, text: deltas.join('') };
}

describe('two channels for deltas', () => {
  let http: RecordedStreamServer;
  let fx: ApiFixture;
  afterAll(async () => {
    await fx.dispose();
    await http.close();
  });

  it('stores a 10,000-character reply of 2,500 deltas as at most 20 durable deltas, and both channels agree', async () => {
    const reply = longReply(2_500, 4);
    expect(reply.text).toHaveLength(10_000);
    http = await serveRecordedStream('anthropic', [{ kind: 'stream', chunks: reply.chunks }]);
    fx = await openApiFixture({ providers: { anthropic: new AnthropicProvider({ baseURL: http.baseURL, defaultModel: 'claude-test' }) } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});

    const live: LiveDelta[] = [];
    const watcher = await fx.connect();
    watcher.subscribe(fx.server.subjects.liveOf(threadId), (message) => live.push(...decodeLiveBatch(message.data)));
    await watcher.flush();

    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'write a lot' }, provider: { name: 'anthropic' } });
    await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 20_000 }).toBe('completed');

    // A reader of the durable events only…
    const { events } = await client.call('thread.events', { threadId, after: 0 });
    const durableDeltas = events.filter(({ event }) => event.type === 'part.delta');
    expect(durableDeltas.length).toBeGreaterThan(0);
    expect(durableDeltas.length).toBeLessThanOrEqual(20);
    const durableText = rebuildView(threadId, events).turns[turnId]!.messages[1].parts.map((part) => part.text).join('');
    // …and a watcher of the live channel see the same text.
    await watcher.flush();
    expect(live).toHaveLength(2_500);
    expect(live.map((delta) => delta.text).join('')).toBe(reply.text);
    expect(durableText).toBe(reply.text);
    console.log(`coalescing: 2,500 provider deltas → ${durableDeltas.length} durable part.delta events, ${events.length} events in all`);
  });
});
