import { afterAll, describe, expect, inject, it } from 'vitest';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { MSGPACK, encode } from '../../bus/index.ts';
import { decodeLiveBatch } from '../../protocol/liveBatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

/** 300 different characters, so a delta out of order or twice changes the text. */
const TEXT = Array.from({ length: 300 }, (_, i) => String.fromCharCode(0x4e00 + i)).join('');
const REASONING = 'first, think it through. '.repeat(4);

describe('live deltas over a real nats-server, batched per turn of the loop', () => {
  let fx: ApiFixture;
  afterAll(async () => {
    await fx?.dispose();
  });

  it('reach every onLive listener once each, in order, in fewer messages than deltas; what others send on the thread’s live subjects is ignored', async () => {
    // One character per delta, and no pause between them: the provider hands over many deltas in one turn of the loop.
    fx = await openApiFixture({ natsUrl: inject('natsUrl'), providers: { scripted: new ScriptedProvider({ chunkSize: 1, steps: [[{ reasoning: REASONING }, { text: TEXT }]] }) } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', { title: 'typed live' });

    const raw = await fx.connect();
    const messages: LiveDelta[][] = [];
    raw.subscribe(fx.server.subjects.liveOf(threadId), (message) => {
      try {
        messages.push(decodeLiveBatch(message.data));
      } catch {
        // The garbage this test sends itself.
      }
    });
    await raw.flush();
    const viaApi = await client.watchThread(threadId);
    const viaSubjects = await client.watchThread(threadId, { via: 'subjects' });
    const heard = { api: [] as LiveDelta[], subjects: [] as LiveDelta[] };
    viaApi.onLive((delta) => heard.api.push(delta));
    viaSubjects.onLive((delta) => heard.subjects.push(delta));
    await client.bus.flush();

    // Not from the lease holder (no lease has this channel): undecodable bytes, a bare delta, a batch that looks right.
    const forged = fx.server.subjects.live('default', threadId, 'f'.repeat(64));
    const stray = { turnId: 'stray', step: 1, partId: 'stray-p', kind: 'text', text: 'stray' };
    raw.publish(forged, new Uint8Array([0xc1, 0xff, 0x00]), { headers: { 'content-type': MSGPACK } });
    raw.publish(forged, encode(stray, MSGPACK), { headers: { 'content-type': MSGPACK } });
    raw.publish(forged, encode([42, stray], MSGPACK), { headers: { 'content-type': MSGPACK } });
    await raw.flush();

    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'type' } });
    const total = REASONING.length + TEXT.length;
    await expect.poll(() => viaApi.context.view?.turns[turnId]?.state, { timeout: 20_000 }).toBe('completed');
    await expect.poll(() => [heard.api.length, heard.subjects.length], { timeout: 10_000 }).toEqual([total, total]);

    for (const turns of [heard.api, heard.subjects]) {
      expect(turns.every((delta) => delta.turnId === turnId)).toBe(true);
      expect(turns.filter((delta) => delta.kind === 'reasoning').map((delta) => delta.text).join('')).toBe(REASONING);
      expect(turns.filter((delta) => delta.kind === 'text').map((delta) => delta.text).join('')).toBe(TEXT);
    }
    // Both ways of listening hear exactly what went over the subject, delta by delta.
    const sent = messages.flat().filter((delta) => delta.turnId === turnId);
    expect(sent).toHaveLength(total);
    expect(heard.api).toEqual(sent);
    expect(heard.subjects).toEqual(sent);
    // Batched: far fewer messages than deltas, none over the cap.
    const turnMessages = messages.filter((batch) => batch.some((delta) => delta.turnId === turnId));
    expect(turnMessages.length).toBeLessThan(total / 4);
    expect(Math.max(...turnMessages.map((batch) => batch.length))).toBeLessThanOrEqual(256);

    // And the durable text is the same.
    const turn = (await client.call('thread.get', { threadId })).thread.turns[turnId]!;
    expect(turn.messages[1].parts.map((part) => part.text)).toEqual([REASONING, TEXT]);
    viaApi.close();
    viaSubjects.close();
  });
});
