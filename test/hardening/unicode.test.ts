import { afterAll, describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub, JSON_TYPE, MSGPACK } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { decodeLiveBatch } from '../../protocol/liveBatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from '../support/tempDir.ts';

const settled = ['completed', 'failed', 'interrupted'];

/** The rule: a lone UTF-16 surrogate becomes U+FFFD before anything is stored; pairs stay pairs. */
describe('lone surrogates', () => {
  const dir = tempDir('turnloom-unicode-');
  afterAll(() => dir.remove());

  async function open(script?: ConstructorParameters<typeof ScriptedProvider>[0]) {
    const hub = new InProcessHub();
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), providers: { scripted: new ScriptedProvider(script) } });
    const json = new TurnloomClient(hub.connect(), { contentType: JSON_TYPE });
    const msgpack = new TurnloomClient(hub.connect(), { contentType: MSGPACK });
    return { hub, server, json, msgpack };
  }

  it('reads back one well-formed text through JSON, msgpack, thread.list and a restart', async () => {
    const first = await open();
    const created = await first.json.call('thread.create', { title: 'a\ud800b\udc00c 😀' });
    const fromMsgpack = await first.msgpack.call('thread.create', { title: 'x\ud83dy' });
    const expected = 'a\ufffdb\ufffdc 😀';
    expect((await first.json.call('thread.get', { threadId: created.threadId })).thread.title).toBe(expected);
    expect((await first.msgpack.call('thread.get', { threadId: created.threadId })).thread.title).toBe(expected);
    expect((await first.json.call('thread.get', { threadId: fromMsgpack.threadId })).thread.title).toBe('x\ufffdy');
    const listed = (await first.json.call('thread.list', {})).threads.map((thread) => thread.title).sort();
    expect(listed).toEqual(['a\ufffdb\ufffdc 😀', 'x\ufffdy']);
    await first.server.stop();

    const second = await open();
    expect((await second.msgpack.call('thread.get', { threadId: created.threadId })).thread.title).toBe(expected);
    expect((await second.json.call('thread.list', {})).threads.map((thread) => thread.title).sort()).toEqual(listed);
    await second.server.stop();
  });

  it('runs a turn whose input holds a lone surrogate: the request still matches the log byte for byte', async () => {
    // A step that asks (so the request is derived twice) and an answer that quotes the input back.
    const { server, json } = await open((request) => {
      const input = request.messages.find((message) => message.role === 'user');
      return { steps: [[{ toolCall: { name: 'deploy', approval: true, result: 'deployed' } }], [{ text: `You said: ${input?.role === 'user' ? input.text : ''}` }]] };
    });
    const { threadId } = await json.call('thread.create', {});
    const { turnId } = await json.call('turn.start', { threadId, input: { text: 'fix \ud800 this' } });
    await expect.poll(async () => (await json.call('approval.list', { threadId })).approvals.length, { timeout: 10_000 }).toBe(1);
    const [approval] = (await json.call('approval.list', { threadId })).approvals;
    await json.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
    await expect.poll(async () => (await json.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBeOneOf(settled);
    const turn = (await json.call('thread.get', { threadId })).thread.turns[turnId]!;
    expect(turn.state).toBe('completed');
    expect(turn.messages[0].parts[0]!.text).toBe('fix \ufffd this');
    expect(turn.messages[1].parts.at(-1)!.text).toContain('fix \ufffd this');
    await server.stop();
  });

  it('joins surrogate pairs a provider splits across deltas, and replaces lone ones, live and stored alike', async () => {
    const text = 'emoji 😀👍🏽 and a lone \ud800 here, a lone low \udc00 there, and a dangling high at the end \ud83d';
    const { hub, server, json } = await open({ chunkSize: 1, steps: [[{ text }]] });
    const { threadId } = await json.call('thread.create', {});
    const live: LiveDelta[] = [];
    const listener = hub.connect();
    listener.subscribe(server.subjects.liveOf(threadId), (message) => live.push(...decodeLiveBatch(message.data)));
    await listener.flush();
    const { turnId } = await json.call('turn.start', { threadId, input: { text: 'talk' } });
    await expect.poll(async () => (await json.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBe('completed');
    const stored = (await json.call('thread.get', { threadId })).thread.turns[turnId]!.messages[1].parts[0]!.text;
    expect(stored).toBe('emoji 😀👍🏽 and a lone \ufffd here, a lone low \ufffd there, and a dangling high at the end \ufffd');
    expect(live.map((delta) => delta.text).join('')).toBe(stored);
    await server.stop();
  });
});
