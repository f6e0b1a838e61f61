import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MSGPACK, encode } from '../../bus/index.ts';
import type { Bus, DomainEvent, StoredEvent } from '../../domain/index.ts';
import { InspectorRelay } from '../../inspector/index.ts';
import type { TurnloomClient } from '../../client/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { leaseByHand, turnEvents } from '../support/engineFixture.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { openRelayPage } from '../support/relayPage.ts';
import { type SseMessage, type SseStream, openSse } from '../support/sseClient.ts';

let server: NatsServerHandle;
let fx: ApiFixture;
let client: TurnloomClient;
let relayBus: Bus;
let relay: InspectorRelay;
/** The cookie the page got for opening the relay's printed address: what every request below carries unless it says otherwise. */
let cookie: string;

beforeAll(async () => {
  // Its own nats-server: one test stops and restarts it.
  server = await startNatsServer();
  // Leases taken by hand are never renewed: they must outlast the tests.
  fx = await openApiFixture({ natsUrl: server.url, workers: { leaseTimeoutMs: 600_000 } });
  client = await fx.client();
  relayBus = await fx.connect();
  relay = await new InspectorRelay({ bus: relayBus, prefix: fx.prefix, port: 0 }).start();
  ({ cookie } = await openRelayPage(relay.pageUrl));
});
afterAll(async () => {
  await relay.stop();
  await fx.dispose();
  await server.dispose();
});

const seqs = (messages: SseMessage[]) => messages.filter((message) => message.event === 'event').map((message) => (message.data as StoredEvent).threadSeq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

/** A thread with an open turn, leased by hand, that `turn.record` can write deltas into as a worker would; `live` is its lease's live subject. */
async function threadWithOpenPart(): Promise<{ threadId: string; turnId: string; live: string; write(count: number, tag: string): Promise<void> }> {
  const { threadId } = await client.call('thread.create', {});
  const { turnId } = await client.call('turn.start', { threadId, input: { text: 'stream' } });
  const t = turnEvents(turnId);
  const { engine } = fx.server;
  const live = await leaseByHand(engine, fx.server.subjects, threadId, turnId);
  await engine.submit({ type: 'turn.record', commandId: `${threadId}-open`, threadId, turnId, events: [t.sessionStarted(), t.started(), t.step(1), { type: 'part.started', turnId, partId: 'p', step: 1, kind: 'text' }] });
  return {
    threadId,
    turnId,
    live,
    write: async (count, tag) => {
      const events: DomainEvent[] = Array.from({ length: count }, (_, index) => ({ type: 'part.delta', turnId, partId: 'p', text: `${tag}${index},` }));
      await engine.submit({ type: 'turn.record', commandId: `${threadId}-${tag}`, threadId, turnId, events });
    },
  };
}

/** A plain HTTP request, with the page's cookie unless `headers` gives another (`cookie: ''`: none). */
function raw(path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const headers = { cookie, ...options.headers };
  if (headers.cookie === '') delete (headers as { cookie?: string }).cookie;
  return new Promise((resolve, reject) => {
    const req = request(`${relay.url.slice(0, -1)}${path}`, { method: options.method ?? 'GET', headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, headers: response.headers }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const post = (method: string, params: unknown, headers: Record<string, string> = {}) =>
  raw(`/api/${method}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: relay.url.slice(0, -1), ...headers }, body: JSON.stringify(params) });

describe('the inspector relay: one thread, live, over server-sent events', () => {
  let open: SseStream[] = [];
  const stream = async (path: string, headers: Record<string, string> = {}) => {
    const opened = await openSse(`${relay.url.slice(0, -1)}${path}`, { cookie, ...headers });
    open.push(opened);
    return opened;
  };
  afterAll(() => open.forEach((opened) => opened.close()));

  it('sends the whole log in order, each event once (past one page), says caughtUp, then follows new commits, live deltas and inspections', async () => {
    const thread = await threadWithOpenPart();
    await thread.write(2_400, 'a');
    const { seq } = await client.call('thread.get', { threadId: thread.threadId });
    const sse = await stream(`/stream/threads/${thread.threadId}?after=0`);
    expect(sse.status).toBe(200);
    await expect.poll(() => sse.messages.find((message) => message.event === 'caughtUp'), { timeout: 20_000 }).toBeDefined();
    expect(sse.messages.find((message) => message.event === 'caughtUp')!.data).toEqual({ seq });
    expect(seqs(sse.messages)).toEqual(range(1, seq));
    expect(sse.messages.filter((message) => message.event === 'event').map((message) => message.id)).toEqual(range(1, seq).map(String));

    await thread.write(3, 'b');
    const typed = [
      { turnId: thread.turnId, step: 1, partId: 'p', kind: 'text', text: 'typing' },
      { turnId: thread.turnId, step: 1, partId: 'p', kind: 'text', text: '…' },
    ];
    // Only the lease holder's channel reaches the page; a batch on another is dropped.
    relayBus.publish(thread.live.replace(/\.[^.]+$/, `.${'f'.repeat(32)}`), encode([{ ...typed[0], text: 'forged' }], MSGPACK), { headers: { 'content-type': MSGPACK } });
    relayBus.publish(thread.live, encode(typed, MSGPACK), { headers: { 'content-type': MSGPACK } });
    await expect.poll(() => seqs(sse.messages).at(-1), { timeout: 10_000 }).toBe(seq + 3);
    expect(seqs(sse.messages)).toEqual(range(1, seq + 3));
    // One bus message, one server-sent event: the batch as it came, in order.
    await expect.poll(() => sse.messages.find((message) => message.event === 'live')?.data, { timeout: 10_000 }).toEqual(typed);
    expect(sse.messages.filter((message) => message.event === 'live')).toHaveLength(1);
    const inspections = sse.messages.filter((message) => message.event === 'inspect').map((message) => message.data as { threadSeq: number; transitions: unknown[] });
    expect(inspections.at(-1)).toMatchObject({ threadSeq: seq + 3, outcome: 'accepted' });
    expect(inspections.at(-1)!.transitions).toHaveLength(3);
  });

  it('resumes after Last-Event-ID when the browser reconnects: nothing twice, nothing missed', async () => {
    const thread = await threadWithOpenPart();
    await thread.write(10, 'a');
    const first = await stream(`/stream/threads/${thread.threadId}?after=0`);
    await expect.poll(() => first.messages.some((message) => message.event === 'caughtUp'), { timeout: 10_000 }).toBe(true);
    const seen = seqs(first.messages).at(-1)!;
    first.close();
    await thread.write(5, 'b');
    // EventSource sends the last id it saw; it wins over the after= of the URL it reopens.
    const second = await stream(`/stream/threads/${thread.threadId}?after=0`, { 'last-event-id': String(seen) });
    await expect.poll(() => seqs(second.messages).at(-1), { timeout: 10_000 }).toBe(seen + 5);
    expect(seqs(second.messages)).toEqual(range(seen + 1, seen + 5));
    // The lease was taken before the point it resumed from: its live deltas still come through, and only its.
    const typed = { turnId: thread.turnId, step: 1, partId: 'p', kind: 'text', text: 'after the resume' };
    relayBus.publish(thread.live.replace(/\.[^.]+$/, `.${'f'.repeat(32)}`), encode([{ ...typed, text: 'forged' }], MSGPACK), { headers: { 'content-type': MSGPACK } });
    relayBus.publish(thread.live, encode([typed], MSGPACK), { headers: { 'content-type': MSGPACK } });
    await expect.poll(() => second.messages.filter((message) => message.event === 'live').map((message) => message.data), { timeout: 10_000 }).toEqual([[typed]]);
  });

  it('relays only what the log holds: an event out of sequence on the subject makes it read the log, and a made-up one is never sent', async () => {
    const thread = await threadWithOpenPart();
    const sse = await stream(`/stream/threads/${thread.threadId}?after=0`);
    await expect.poll(() => sse.messages.some((message) => message.event === 'caughtUp'), { timeout: 10_000 }).toBe(true);
    const last = seqs(sse.messages).at(-1)!;
    const bogus: StoredEvent = { seq: 1e9, threadId: thread.threadId, threadSeq: last + 3, commandId: 'bogus', at: Date.now(), event: { type: 'thread.renamed', title: 'made up' } };
    relayBus.publish(client.subjects.events(thread.threadId), encode(bogus, MSGPACK), { headers: { 'content-type': MSGPACK } });
    await thread.write(4, 'b');
    await expect.poll(() => seqs(sse.messages).at(-1), { timeout: 10_000 }).toBe(last + 4);
    expect(seqs(sse.messages)).toEqual(range(1, last + 4));
    expect(sse.messages.some((message) => (message.data as StoredEvent).commandId === 'bogus')).toBe(false);
  });

  it('catches up on what was committed while its NATS server was down, once each, and says how its link went', async () => {
    const thread = await threadWithOpenPart();
    const sse = await stream(`/stream/threads/${thread.threadId}?after=0`);
    await expect.poll(() => sse.messages.some((message) => message.event === 'caughtUp'), { timeout: 10_000 }).toBe(true);
    const last = seqs(sse.messages).at(-1)!;
    await server.stop();
    await thread.write(50, 'down');
    await server.start();
    await expect.poll(() => seqs(sse.messages).at(-1), { timeout: 30_000, interval: 100 }).toBe(last + 50);
    expect(seqs(sse.messages)).toEqual(range(1, last + 50));
    const links = sse.messages.filter((message) => message.event === 'relay').map((message) => (message.data as { bus: string }).bus);
    expect(links[0]).toBe('connected');
    expect(links).toContain('reconnecting');
    expect(links.at(-1)).toBe('connected');
  });

  it('ends the stream with `failed` for a thread that does not exist, and refuses a malformed id or start', async () => {
    const missing = await stream('/stream/threads/no_such_thread?after=0');
    await missing.ended;
    expect(missing.messages.at(-1)).toMatchObject({ event: 'failed', data: { code: 'not_found' } });
    expect((await raw('/stream/threads/a.b?after=0')).status).toBe(400);
    expect((await raw(`/stream/threads/${'x'.repeat(129)}?after=0`)).status).toBe(400);
    expect((await raw('/stream/threads/abc?after=-1')).status).toBe(400);
    expect((await raw('/stream/threads/abc?after=1.5')).status).toBe(400);
  });
});

describe('the inspector relay: what it answers, and to whom', () => {
  it('serves the page on / and /threads/<id>, its assets, and nothing outside its folder', async () => {
    for (const path of ['/', '/threads/thr_abc']) {
      const page = await raw(path);
      expect(page.status).toBe(200);
      expect(page.body).toContain('<!doctype html>');
      // Offline: nothing is loaded from anywhere but the relay.
      expect(page.body).not.toMatch(/(src|href)="(https?:)?\/\//i);
    }
    expect((await raw('/assets/..%2F..%2Fpackage.json')).status).toBe(404);
    expect((await raw('/assets/../../package.json')).status).toBe(404);
    expect((await raw('/assets/.hidden.js')).status).toBe(404);
    expect((await raw('/nothing-here')).status).toBe(404);
  });

  it('lays out the four machines for the charts, in full and fitted', async () => {
    type Charts = Array<{ machine: string; width: number; states: Array<{ path: string }> }>;
    const { machines, fitted } = JSON.parse((await raw('/charts.json')).body) as { machines: Charts; fitted: Charts };
    expect(machines.map((chart) => chart.machine)).toEqual(['session', 'turn', 'part', 'approval']);
    expect(machines[1]!.states.map((state) => state.path)).toContain('running.awaitingApproval');
    expect(fitted.map((chart) => chart.machine)).toEqual(['session', 'turn', 'part', 'approval']);
    expect(fitted[1]!.states.map((state) => state.path).sort()).toEqual(machines[1]!.states.map((state) => state.path).sort());
    expect(fitted[1]!.width).toBeLessThan(machines[1]!.width / 2);
  });

  it('answers only on its own address, and takes API calls only from its own page, for the methods the page needs', async () => {
    expect((await raw('/', { headers: { host: 'attacker.example:80' } })).status).toBe(403);
    expect((await raw('/', { headers: { host: `127.0.0.1.nip.io:${relay.port}` } })).status).toBe(403);
    const ok = await post('health', {});
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).result.status).toBe('ok');
    expect((await post('health', {}, { origin: 'http://attacker.example' })).status).toBe(403);
    expect((await post('health', {}, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await raw('/api/health', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' })).status).toBe(403);
    // Neither archiving (an admin's), nor configuring a thread's permissions, nor watches of its own: the page has no use for them.
    expect((await post('thread.archive', { threadId: 'x' })).status).toBe(404);
    expect((await post('thread.configure', { threadId: 'x', mode: 'full' })).status).toBe(404);
    expect((await post('thread.watch', { threadId: 'x', deliverTo: '_INBOX.x.y' })).status).toBe(404);
    // The API's own answers come back as they are, typed.
    const missing = JSON.parse((await post('approval.respond', { threadId: 'nope', approvalId: 'a1', decision: 'once' })).body);
    expect(missing.error.code).toBe('not_found');
    const bad = JSON.parse((await post('thread.get', { threadId: 'nope', extra: 1 })).body);
    expect(bad.error.code).toBe('invalid_payload');
    const notJson = await raw('/api/health', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(JSON.parse(notJson.body).error.code).toBe('invalid_payload');
    const huge = await raw('/api/health', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `"${'x'.repeat(1_100_000)}"` });
    expect(JSON.parse(huge.body).error.code).toBe('invalid_payload');
  });
});

describe('the inspector relay lends its token to its own page only', () => {
  /** A thread whose turn waits on an approval, answerable through the relay. */
  async function pendingApproval(): Promise<{ threadId: string; approvalId: string }> {
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'deploy' } });
    const t = turnEvents(turnId);
    await fx.server.engine.submit({
      type: 'turn.record',
      commandId: `${threadId}-ask`,
      threadId,
      turnId,
      events: [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested('a1', 'p1', 'c1')],
    });
    return { threadId, approvalId: 'a1' };
  }
  const answered = async (threadId: string) => {
    const { thread } = await client.call('thread.get', { threadId });
    return { state: Object.values(thread.turns)[0]!.approvals[0]!.state, rules: thread.permissions.rules };
  };

  it('refuses a local process without the page’s cookie: curl cannot approve a call or add a rule, nor read a thread', async () => {
    const { threadId, approvalId } = await pendingApproval();
    const approve = JSON.stringify({ threadId, approvalId, decision: 'always' });
    const json = { 'content-type': 'application/json' };
    const key = new URL(relay.pageUrl).searchParams.get('key')!;
    const attempts: Array<[string, Promise<{ status: number; headers: Record<string, unknown> }>, number]> = [
      ['no cookie, no Origin (curl)', raw('/api/approval.respond', { method: 'POST', headers: { ...json, cookie: '' }, body: approve }), 401],
      ['a wrong key as the cookie', raw('/api/approval.respond', { method: 'POST', headers: { ...json, cookie: `turnloom_inspector_${relay.port}=${key.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))}` }, body: approve }), 403],
      ['another relay’s cookie', raw('/api/approval.respond', { method: 'POST', headers: { ...json, cookie: `turnloom_inspector_${relay.port + 1}=${key}` }, body: approve }), 401],
      ['the cookie, from a page on another site', raw('/api/approval.respond', { method: 'POST', headers: { ...json, origin: 'http://attacker.example' }, body: approve }), 403],
      ['the cookie, from another port of 127.0.0.1 (same site)', raw('/api/approval.respond', { method: 'POST', headers: { ...json, origin: `http://127.0.0.1:${relay.port + 1}`, 'sec-fetch-site': 'same-site' }, body: approve }), 403],
      ['the stream, without the cookie', raw(`/stream/threads/${threadId}?after=0`, { headers: { cookie: '' } }), 401],
      ['the stream, for a page on another port', raw(`/stream/threads/${threadId}?after=0`, { headers: { 'sec-fetch-site': 'same-site' } }), 403],
      ['the page, without the cookie', raw('/', { headers: { cookie: '' } }), 401],
      ['the charts, without the cookie', raw('/charts.json', { headers: { cookie: '' } }), 401],
      ['the page, with a wrong key', raw('/?key=not-the-key-0123456789', { headers: { cookie: '' } }), 403],
    ];
    for (const [what, attempt, status] of attempts) {
      const answer = await attempt;
      expect(`${what}: ${answer.status}`).toBe(`${what}: ${status}`);
      expect(answer.headers['set-cookie']).toBeUndefined();
    }
    expect(await answered(threadId)).toEqual({ state: 'pending', rules: [] });
  });

  it('trades the printed key for an HttpOnly, SameSite=Strict cookie of its own and a redirect to the clean address; with it the page answers', async () => {
    const { threadId, approvalId } = await pendingApproval();
    const key = new URL(relay.pageUrl).searchParams.get('key')!;
    expect(relay.pageUrl).toBe(`http://127.0.0.1:${relay.port}/?key=${key}`);
    const opened = await raw(`/threads/${threadId}?key=${key}`, { headers: { cookie: '' } });
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe(`/threads/${threadId}`);
    expect(opened.headers['set-cookie']).toEqual([`turnloom_inspector_${relay.port}=${key}; HttpOnly; SameSite=Strict; Path=/`]);
    const page = (opened.headers['set-cookie'] as string[])[0]!.split(';')[0]!;
    expect(JSON.parse((await post('approval.respond', { threadId, approvalId, decision: 'once' }, { cookie: page })).body).result).toMatchObject({ threadId });
    expect((await answered(threadId)).state).toBe('approved');

    // Each start has a key of its own, and each relay a cookie of its own.
    const other = await new InspectorRelay({ bus: relayBus, prefix: fx.prefix, port: 0 }).start();
    try {
      expect(new URL(other.pageUrl).searchParams.get('key')).not.toBe(key);
      const { cookie: otherCookie } = await openRelayPage(other.pageUrl);
      expect(otherCookie.startsWith(`turnloom_inspector_${other.port}=`)).toBe(true);
    } finally {
      await other.stop();
    }
  });
});
