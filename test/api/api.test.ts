import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, TurnloomError } from '../../domain/index.ts';
import { JSON_TYPE, MSGPACK, decode, encode } from '../../bus/index.ts';
import type { TurnloomClient } from '../../client/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { turnEvents } from '../support/engineFixture.ts';

let fx: ApiFixture;
let client: TurnloomClient;
let raw: Bus;

beforeAll(async () => {
  fx = await openApiFixture();
  client = await fx.client();
  raw = await fx.connect();
});
afterAll(async () => {
  await fx.dispose();
});

/** Sends bytes as any client would and returns the decoded answer. */
async function rawCall(method: string, data: Uint8Array, headers: Record<string, string> = {}) {
  const reply = await raw.request(`${fx.prefix}.v1.api.${method}`, data, { headers, timeoutMs: 5_000 });
  return decode(reply.data, reply.headers['content-type'] === MSGPACK ? MSGPACK : JSON_TYPE) as { result?: unknown; error?: { code: string; message: string; details: Record<string, unknown> } };
}

async function errorOf(promise: Promise<unknown>): Promise<TurnloomError> {
  return promise.then(
    () => {
      throw new Error('expected an error');
    },
    (error: unknown) => error as TurnloomError,
  );
}

describe('headless API over the in-process bus', () => {
  it('creates, lists, reads and pages a thread', async () => {
    const created = await client.call('thread.create', { title: 'login race' });
    expect(created.commandId).toBeTruthy();
    expect(created.threadId).toMatch(/^thr_/);
    const { threadId } = created;
    await client.call('thread.rename', { threadId, title: 'the login race' });
    const { thread, seq } = await client.call('thread.get', { threadId });
    expect(thread.title).toBe('the login race');
    expect(seq).toBe(2);
    expect((await client.call('thread.list', {})).threads.map((summary) => summary.id)).toContain(threadId);
    const page = await client.call('thread.events', { threadId, after: 1 });
    expect(page).toMatchObject({ lastSeq: 2 });
    expect(page.events.map((event) => event.event.type)).toEqual(['thread.renamed']);
  });

  it('generates a command id when absent and answers a retry with the same result', async () => {
    const first = await client.call('thread.create', { commandId: 'retry-me', title: 'a' });
    const again = await client.call('thread.create', { commandId: 'retry-me', title: 'a' });
    expect(again).toEqual(first);
    const turn = await client.call('turn.start', { commandId: 'start-1', threadId: first.threadId, input: { text: 'hello' } });
    expect(turn.turnId).toMatch(/^turn_/);
    expect(await client.call('turn.start', { commandId: 'start-1', threadId: first.threadId, input: { text: 'hello' } })).toEqual(turn);
    expect(turn).toMatchObject({ inbox: 'started' });
    // A second turn while one is open waits behind it, and a retry of that gets the same answer.
    const second = await client.call('turn.start', { commandId: 'start-2', threadId: first.threadId, input: { text: 'another' } });
    expect(second).toMatchObject({ inbox: 'queued', interrupted: null });
    expect(await client.call('turn.start', { commandId: 'start-2', threadId: first.threadId, input: { text: 'another' } })).toEqual(second);
  });

  it('pages the log from anywhere to its end, however far behind the caller is', async () => {
    const { threadId } = await client.call('thread.create', { title: 'long' });
    for (let i = 0; i < 1_010; i++) await fx.server.engine.submit({ type: 'thread.rename', commandId: `long-${i}`, threadId, title: `t${i}` });
    const far = await client.call('thread.events', { threadId, after: 5 });
    expect(far.lastSeq).toBe(1_011);
    expect(far.events.map((event) => event.threadSeq)).toEqual(Array.from({ length: 1_000 }, (_, index) => index + 6));
    expect((await client.call('thread.events', { threadId, after: 1_005 })).events.map((event) => event.threadSeq)).toEqual([1_006, 1_007, 1_008, 1_009, 1_010, 1_011]);
    expect((await client.call('thread.events', { threadId, after: 0 })).events.map((event) => event.threadSeq).slice(0, 3)).toEqual([1, 2, 3]);
    expect((await client.call('thread.events', { threadId, after: 11, limit: 5 })).events.map((event) => event.threadSeq)).toEqual([12, 13, 14, 15, 16]);
  });

  it('lists pending approvals and records who answered them', async () => {
    const { threadId } = await client.call('thread.create', { title: 'approvals' });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'clean up' } });
    const t = turnEvents(turnId);
    await fx.server.engine.submit({
      type: 'turn.record',
      commandId: `rec-${turnId}`,
      threadId,
      turnId,
      events: [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested('a1', 'p1', 'c1')],
    });
    const { approvals } = await client.call('approval.list', {});
    expect(approvals).toEqual([expect.objectContaining({ id: 'a1', threadId, turnId, state: 'pending', toolName: 'bash' })]);
    await client.call('approval.respond', { threadId, approvalId: 'a1', decision: 'approve' });
    expect((await client.call('approval.list', { threadId })).approvals).toEqual([]);
    const { thread } = await client.call('thread.get', { threadId });
    expect(thread.turns[turnId]!.approvals[0]).toMatchObject({ state: 'approved', decidedBy: 'local' });
    const twice = await errorOf(client.call('approval.respond', { threadId, approvalId: 'a1', decision: 'deny' }));
    expect(twice.details).toEqual({ machine: 'approval', state: 'approved', event: 'approval.denied', actorId: 'a1' });
  });

  it('answers health to anyone, and not_found for the diff or revert of a turn that changed nothing', async () => {
    expect(await client.call('health', {})).toMatchObject({ status: 'ok', service: 'turnloom' });
    // Without a tokens file every caller is the local principal, with every scope.
    expect(await client.call('auth.whoami', {})).toEqual({ principal: 'local', scopes: ['read', 'operate', 'approve', 'admin'] });
    const { threadId } = await client.call('thread.create', {});
    expect(await client.call('checkpoint.list', { threadId })).toEqual({ checkpoints: [], off: null });
    expect((await errorOf(client.call('checkpoint.diff', { threadId, checkpointId: 'nope' }))).code).toBe('not_found');
    expect((await errorOf(client.call('checkpoint.revert', { threadId, checkpointId: 'nope' }))).code).toBe('not_found');
  });
});

describe('bad input: a typed error, and nothing written', () => {
  const json = (value: unknown) => encode(value, JSON_TYPE);
  const cases: Array<[string, string, () => Uint8Array, Record<string, string>, string]> = [
    ['malformed JSON', 'thread.create', () => new TextEncoder().encode('{"title": '), { 'content-type': JSON_TYPE }, 'invalid_payload'],
    ['malformed msgpack', 'thread.create', () => Uint8Array.from([0x82, 0xa5, 0x74]), { 'content-type': MSGPACK }, 'invalid_payload'],
    ['a payload that is not an object', 'thread.create', () => json([1, 2]), {}, 'invalid_payload'],
    ['a wrong type', 'thread.create', () => json({ title: 42 }), {}, 'invalid_payload'],
    ['an unknown field', 'thread.create', () => json({ title: 'x', colour: 'red' }), {}, 'invalid_payload'],
    ['an id that cannot be a subject token', 'thread.create', () => json({ threadId: 'a.b' }), {}, 'invalid_payload'],
    ['an unknown method', 'thread.explode', () => json({}), {}, 'not_found'],
    ['an unsupported content type', 'thread.create', () => json({}), { 'content-type': 'text/yaml' }, 'invalid_payload'],
    ['a payload over 1 MiB', 'thread.create', () => json({ title: 'x'.repeat(1_100_000) }), {}, 'invalid_payload'],
    ['an unknown thread', 'turn.start', () => json({ threadId: 'nope', input: { text: 'hi' } }), {}, 'not_found'],
    ['a command id under the system prefix', 'thread.create', () => json({ commandId: 'sys:settle:x' }), {}, 'invalid_payload'],
  ];

  it.each(cases)('%s', async (_name, method, payload, headers, code) => {
    const before = fx.store.lastSeq();
    const threads = [...fx.store.threadsNewestFirst(null)].map(({ summary }) => summary).length;
    const answer = await rawCall(method, payload(), headers);
    expect(answer.result).toBeUndefined();
    expect(answer.error).toMatchObject({ code, message: expect.any(String), details: expect.any(Object) });
    expect(fx.store.lastSeq()).toBe(before);
    expect([...fx.store.threadsNewestFirst(null)].map(({ summary }) => summary)).toHaveLength(threads);
  });

  it('explains which field is wrong', async () => {
    const answer = await rawCall('turn.start', encode({ threadId: 'x', input: {} }, JSON_TYPE));
    expect(answer.error!.details.issues).toEqual([expect.objectContaining({ path: 'input.text' })]);
  });
});
