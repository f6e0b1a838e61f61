import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, type BusError, type StoredEvent, TurnloomError } from '../../domain/index.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { Worker } from '../../services/worker/worker.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { turnEvents } from '../support/engineFixture.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';
import { openRelayPage } from '../support/relayPage.ts';
import { openSse } from '../support/sseClient.ts';
import { InspectorRelay } from '../../inspector/index.ts';
import { natsUserPasswords, shippedPermissions } from '../support/natsUsers.ts';

const tokens = {
  'reader-token-0123456789': { principal: 'riley', scopes: ['read' as const] },
  'operator-token-0123456789': { principal: 'olive', scopes: ['read' as const, 'operate' as const] },
  'approver-token-0123456789': { principal: 'ada', scopes: ['read' as const, 'approve' as const] },
  'alice-token-0123456789': { principal: 'alice', scopes: ['read' as const, 'operate' as const, 'approve' as const] },
  'bob-token-0123456789': { principal: 'bob', scopes: ['read' as const, 'operate' as const, 'approve' as const] },
  'admin-token-0123456789': { principal: 'root', scopes: ['read' as const, 'admin' as const] },
};

async function codeOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: TurnloomError) => error.code,
  );
}

describe('principals and scopes', () => {
  let fx: ApiFixture;
  let clientFor: (token?: string) => Promise<TurnloomClient>;
  beforeAll(async () => {
    fx = await openApiFixture({ auth: { tokens } });
    clientFor = (token) => fx.client(token ? { token } : {});
  });
  afterAll(async () => {
    await fx.dispose();
  });

  it('lets a read-only principal read, but not start a turn or answer an approval', async () => {
    const operator = await clientFor('operator-token-0123456789');
    const reader = await clientFor('reader-token-0123456789');
    // A thread that belongs to nobody in particular: every principal's scopes alone decide.
    const threadId = 'shared-thread';
    await fx.server.engine.submit({ type: 'thread.create', commandId: 'shared', threadId, title: 'scoped', workspace: null, owner: null });
    const { turnId } = await operator.call('turn.start', { threadId, input: { text: 'go' } });
    const t = turnEvents(turnId);
    await fx.server.engine.submit({
      type: 'turn.record',
      commandId: 'scoped-record',
      threadId,
      turnId,
      events: [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested('a1', 'p1', 'c1')],
    });
    const before = fx.store.lastSeq();

    expect((await reader.call('thread.get', { threadId })).thread.title).toBe('scoped');
    const refused = await reader.call('turn.start', { threadId, input: { text: 'sneaky' } }).catch((error: TurnloomError) => error);
    expect(refused).toMatchObject({ code: 'forbidden', details: { principal: 'riley', scope: 'operate', method: 'turn.start' } });
    expect(await codeOf(reader.call('approval.respond', { threadId, approvalId: 'a1', decision: 'approve' }))).toBe('forbidden');
    expect(await codeOf(operator.call('approval.respond', { threadId, approvalId: 'a1', decision: 'approve' }))).toBe('forbidden');
    expect(fx.store.lastSeq()).toBe(before);

    const approver = await clientFor('approver-token-0123456789');
    await approver.call('approval.respond', { threadId, approvalId: 'a1', decision: 'deny', note: 'not today' });
    const approval = (await reader.call('thread.get', { threadId })).thread.turns[turnId]!.approvals[0]!;
    expect(approval).toMatchObject({ state: 'denied', decidedBy: 'ada', note: 'not today' });
  });

  it('keeps a thread to its owner: another principal cannot read, list, watch, answer or interrupt it', async () => {
    const alice = await clientFor('alice-token-0123456789');
    const bob = await clientFor('bob-token-0123456789');
    const root = await clientFor('admin-token-0123456789');
    const { threadId } = await alice.call('thread.create', { title: 'alice only' });
    const { turnId } = await alice.call('turn.start', { threadId, input: { text: 'my secret plan' } });
    const t = turnEvents(turnId);
    await fx.server.engine.submit({
      type: 'turn.record',
      commandId: 'alice-record',
      threadId,
      turnId,
      events: [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested('a-alice', 'p1', 'c1')],
    });
    const window = await alice.call('thread.get', { threadId });
    expect(window.thread.owner).toBe('alice');
    const before = fx.store.lastSeq();

    const attempts: Array<[string, Promise<unknown>]> = [
      ['thread.get', bob.call('thread.get', { threadId })],
      ['thread.events', bob.call('thread.events', { threadId, after: 0 })],
      ['thread.turns', bob.call('thread.turns', { threadId, before: 'dHVybnM6MQ' })],
      ['thread.watch', bob.call('thread.watch', { threadId, deliverTo: bob.bus.inbox() })],
      ['thread.rename', bob.call('thread.rename', { threadId, title: 'mine now' })],
      ['turn.start', bob.call('turn.start', { threadId, input: { text: 'hijack' } })],
      ['turn.interrupt', bob.call('turn.interrupt', { threadId, turnId })],
      ['approval.respond', bob.call('approval.respond', { threadId, approvalId: 'a-alice', decision: 'approve' })],
      ['approval.list', bob.call('approval.list', { threadId })],
      ['session.stop', bob.call('session.stop', { threadId })],
    ];
    for (const [method, attempt] of attempts) expect(`${method}: ${await codeOf(attempt)}`).toBe(`${method}: not_found`);
    expect((await bob.call('thread.list', {})).threads.map((thread) => thread.id)).not.toContain(threadId);
    expect((await bob.call('approval.list', {})).approvals.map((approval) => approval.id)).not.toContain('a-alice');
    expect(fx.store.lastSeq()).toBe(before);

    // The owner and an admin see it.
    expect((await alice.call('thread.list', {})).threads.map((thread) => thread.id)).toContain(threadId);
    expect((await alice.call('approval.list', {})).approvals.map((approval) => approval.id)).toEqual(['a-alice']);
    expect((await root.call('thread.list', {})).threads.map((thread) => thread.id)).toContain(threadId);
    expect((await root.call('thread.get', { threadId })).thread.title).toBe('alice only');
    await alice.call('approval.respond', { threadId, approvalId: 'a-alice', decision: 'approve' });
  });

  it('lets operate keep or narrow what a thread allows, but widening it (a mode, an allow rule) needs the approve scope', async () => {
    const olive = await clientFor('operator-token-0123456789');
    const alice = await clientFor('alice-token-0123456789');
    const before = fx.store.lastSeq();
    const refusals: [string, Promise<unknown>][] = [
      ['create full', olive.call('thread.create', { title: 'wide', mode: 'full' })],
      ['create allow rule', olive.call('thread.create', { title: 'wide', rules: [{ tool: 'bash', pattern: '*', decision: 'allow' }] })],
    ];
    for (const [what, attempt] of refusals) expect(`${what}: ${await codeOf(attempt)}`).toBe(`${what}: forbidden`);
    expect(fx.store.lastSeq()).toBe(before);

    const { threadId } = await olive.call('thread.create', { title: 'olive asks', rules: [{ tool: 'bash', pattern: 'rm *', decision: 'deny' }] });
    const refused = await olive.call('turn.start', { threadId, input: { text: 'run it all' }, mode: 'full' }).catch((error: TurnloomError) => error);
    expect(refused).toMatchObject({ code: 'forbidden', details: { principal: 'olive', scope: 'approve', method: 'turn.start' } });
    expect((refused as TurnloomError).message).toContain('mode "full" is wider than the thread\'s "ask"');
    const steps: [string, Promise<unknown>][] = [
      ['configure auto-edits', olive.call('thread.configure', { threadId, mode: 'auto-edits' })],
      ['configure dropping the deny rule', olive.call('thread.configure', { threadId, rules: [] })],
      ['configure adding an allow rule', olive.call('thread.configure', { threadId, rules: [{ tool: 'bash', pattern: 'rm *', decision: 'deny' }, { tool: 'bash', pattern: 'curl*', decision: 'allow' }] })],
    ];
    for (const [what, attempt] of steps) expect(`${what}: ${await codeOf(attempt)}`).toBe(`${what}: forbidden`);
    const unchanged = (await olive.call('thread.get', { threadId })).thread;
    expect(unchanged.permissions).toEqual({ mode: 'ask', rules: [{ tool: 'bash', pattern: 'rm *', decision: 'deny' }] });
    expect(Object.keys(unchanged.turns)).toEqual([]);

    // Keeping or narrowing is operate's own; the owner with approve may widen.
    await olive.call('thread.configure', { threadId, mode: 'read-only' });
    await olive.call('thread.configure', { threadId, mode: 'ask', rules: [{ tool: 'bash', pattern: 'rm *', decision: 'deny' }, { tool: 'bash', pattern: 'git push*', decision: 'ask' }] }).then(
      () => expect.unreachable('ask after read-only widens'),
      (error: TurnloomError) => expect(error.code).toBe('forbidden'),
    );
    const { threadId: alices } = await alice.call('thread.create', { title: 'alice decides', mode: 'auto-edits' });
    await alice.call('thread.configure', { threadId: alices, mode: 'full', rules: [{ tool: 'bash', pattern: 'npm test*', decision: 'allow' }] });
    expect((await alice.call('thread.get', { threadId: alices })).thread.permissions.mode).toBe('full');
  });

  it('refuses a missing or unknown token, but answers health to anyone', async () => {
    expect(await codeOf((await clientFor()).call('thread.list', {}))).toBe('forbidden');
    expect(await codeOf((await clientFor('wrong-token-0123456789')).call('thread.list', {}))).toBe('forbidden');
    expect((await (await clientFor()).call('health', {})).status).toBe('ok');
  });

  it('tells a token who it names and what it may do, and no one without a known token', async () => {
    expect(await (await clientFor('reader-token-0123456789')).call('auth.whoami', {})).toEqual({ principal: 'riley', scopes: ['read'] });
    expect(await (await clientFor('admin-token-0123456789')).call('auth.whoami', {})).toEqual({ principal: 'root', scopes: ['read', 'admin'] });
    expect(await codeOf((await clientFor()).call('auth.whoami', {}))).toBe('forbidden');
    expect(await codeOf((await clientFor('wrong-token-0123456789')).call('auth.whoami', {}))).toBe('forbidden');
    expect(await codeOf((await clientFor('reader-token-0123456789')).call('auth.whoami', { principal: 'root' } as never))).toBe('invalid_payload');
  });
});

describe('the inspector relay under tokens', () => {
  it('streams a thread only when the relay’s token may read it, and the page’s calls carry that token', async () => {
    const fx = await openApiFixture({ auth: { tokens } });
    const relay = await new InspectorRelay({ bus: await fx.connect(), prefix: fx.prefix, token: 'bob-token-0123456789', port: 0 }).start();
    try {
      const alice = await fx.client({ token: 'alice-token-0123456789' });
      const { threadId } = await alice.call('thread.create', { title: 'alice only' });
      const page = await openRelayPage(relay.pageUrl);
      const sse = await openSse(`${relay.url}stream/threads/${threadId}?after=0`, { cookie: page.cookie });
      await sse.ended;
      expect(sse.messages.at(-1)).toMatchObject({ event: 'failed' });
      expect(['not_found', 'forbidden']).toContain((sse.messages.at(-1)!.data as { code: string }).code);
      expect(sse.messages.map((message) => message.event).filter((event) => event !== 'relay' && event !== 'failed')).toEqual([]);
      // The page's API calls carry the same token: bob cannot answer alice's approvals through it either.
      const listed = await page.fetch('api/thread.list', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(((await listed.json()) as { result: { threads: unknown[] } }).result.threads).toEqual([]);
    } finally {
      await relay.stop();
      await fx.dispose();
    }
  });

  it('lets the page start and revert only what the relay’s token may: a reader’s page learns its scopes and is refused the rest', async () => {
    const fx = await openApiFixture({ auth: { tokens } });
    const relay = await new InspectorRelay({ bus: await fx.connect(), prefix: fx.prefix, token: 'reader-token-0123456789', port: 0 }).start();
    try {
      await fx.server.engine.submit({ type: 'thread.create', commandId: 'shared', threadId: 'shared-thread', title: 'shared', workspace: null, owner: null });
      const before = fx.store.lastSeq();
      const page = await openRelayPage(relay.pageUrl);
      const call = async (method: string, params: unknown) =>
        (await (await page.fetch(`api/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) })).json()) as { result?: unknown; error?: { code: string; details: { scope?: string } } };
      expect((await call('auth.whoami', {})).result).toEqual({ principal: 'riley', scopes: ['read'] });
      for (const [method, params] of [
        ['thread.create', { title: 'mine' }],
        ['turn.start', { threadId: 'shared-thread', input: { text: 'go' } }],
        ['checkpoint.revert', { threadId: 'shared-thread', checkpointId: 'turn-1' }],
      ] as const) {
        expect((await call(method, params)).error, method).toMatchObject({ code: 'forbidden', details: { scope: 'operate' } });
      }
      expect(fx.store.lastSeq()).toBe(before);
    } finally {
      await relay.stop();
      await fx.dispose();
    }
  });
});

describe('the shipped NATS permissions (docs/nats/turnloom-permissions.conf) on a real server', () => {
  const passwords = natsUserPasswords;
  let nats: NatsServerHandle;
  let server: TurnloomServer;
  const dir = tempDir('turnloom-perm-');
  const buses: Bus[] = [];
  const as = async (user: 'engine' | 'client' | 'client2' | 'worker' | 'inspector') => {
    const bus = await NatsBus.connect({
      servers: nats.url,
      user,
      pass: passwords[`TURNLOOM_${user.toUpperCase()}_PASSWORD` as keyof typeof passwords],
      ...(user === 'engine' ? {} : { inboxPrefix: `_INBOX_${user}` }),
    });
    buses.push(bus);
    return bus;
  };
  beforeAll(async () => {
    nats = await startNatsServer({ config: shippedPermissions(), env: passwords });
    server = await startTurnloomServer({ bus: await as('engine'), store: LmdbStore.open(dir.path) });
  });
  afterAll(async () => {
    await server.stop();
    await Promise.all(buses.map((bus) => bus.close()));
    await nats.dispose();
    dir.remove();
  });

  it('lets a worker with the worker user run a turn through the worker protocol alone', async () => {
    const workerBus = await as('worker');
    const worker = await new Worker({ bus: workerBus, workerId: 'perm-worker', adapterFor: () => new ScriptedProvider({ steps: [[{ text: 'done under permissions' }]] }) }).start();
    const api = new TurnloomClient(await as('client'));
    const { threadId } = await api.call('thread.create', { title: 'run by a worker user' });
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'go' } });
    await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBe('completed');
    expect((await api.call('thread.get', { threadId })).thread.turns[turnId]!.messages[1].parts[0]!.text).toBe('done under permissions');
    await worker.stop();
  });

  it('lets the engine user run its own local worker, as `serve --nats-user engine` does', async () => {
    const engineBus = await as('engine');
    const refusals: BusError[] = [];
    engineBus.onError((error) => refusals.push(error));
    const worker = await new Worker({ bus: engineBus, workerId: 'local-worker', adapterFor: () => new ScriptedProvider({ steps: [[{ text: 'done by the local worker' }]] }) }).start();
    const api = new TurnloomClient(await as('client'));
    const { threadId } = await api.call('thread.create', { title: 'run by the engine user' });
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'go' } });
    await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBe('completed');
    expect((await api.call('thread.get', { threadId })).thread.turns[turnId]!.messages[1].parts[0]!.text).toBe('done by the local worker');
    await worker.stop();
    expect(refusals.map((error) => error.message)).toEqual([]);
  });

  it('a worker whose NATS user may not use the worker subjects says so, once a subject', async () => {
    const said: { fields: Record<string, unknown>; message: string }[] = [];
    const log = { debug: () => {}, info: () => {}, warn: () => {}, error: (fields: Record<string, unknown>, message: string) => said.push({ fields, message }) };
    const worker = await new Worker({ bus: await as('client'), workerId: 'misconfigured', log, adapterFor: () => new ScriptedProvider({ steps: [] }) }).start();
    await expect.poll(() => said.map(({ fields }) => fields.subject), { timeout: 10_000 }).toContain('turnloom.v1.work.offer.default');
    await expect.poll(() => said.map(({ fields }) => fields.subject), { timeout: 10_000 }).toContain('turnloom.v1.worker.default.hello');
    expect(said[0]!.message).toMatch(/^this worker cannot join its engine: its NATS user may not use a subject/);
    expect(new Set(said.map(({ fields }) => fields.subject)).size).toBe(said.length);
    await worker.stop();
  });

  it('gives a client no raw event subjects: it follows a thread through thread.watch, on its own inbox', async () => {
    const client = await as('client');
    const errors: BusError[] = [];
    client.onError((error) => errors.push(error));
    const heard: string[] = [];
    client.subscribe('turnloom.v1.evt.>', (message) => heard.push(message.subject));
    client.subscribe('turnloom.v1.live.>', (message) => heard.push(message.subject));
    await client.flush().catch(() => undefined);
    const api = new TurnloomClient(client);
    const { threadId } = await api.call('thread.create', { title: 'watched' });
    const watch = await api.watchThread(threadId);
    await api.call('thread.rename', { threadId, title: 'renamed' });
    await expect.poll(() => watch.context.view?.title).toBe('renamed');
    expect(heard).toEqual([]);
    expect(errors.map((error) => error.kind)).toContain('permission');

    // Another user cannot have deliveries aimed at this user's inbox (nor read it).
    const other = new TurnloomClient(await as('client2'));
    const { threadId: otherThread } = await other.call('thread.create', { title: 'client2 thread' });
    await expect(other.call('thread.watch', { threadId: otherThread, deliverTo: `_INBOX_client.${'x'.repeat(22)}` })).rejects.toMatchObject({ code: 'forbidden' });
    watch.close();
  });

  it('lets the inspector user follow a thread through the relay: its events and inspection records', async () => {
    const relay = await new InspectorRelay({ bus: await as('inspector'), port: 0 }).start();
    try {
      const api = new TurnloomClient(await as('client'));
      const { threadId } = await api.call('thread.create', { title: 'inspected' });
      const sse = await openSse(`${relay.url}stream/threads/${threadId}?after=0`, { cookie: (await openRelayPage(relay.pageUrl)).cookie });
      await expect.poll(() => sse.messages.some((message) => message.event === 'caughtUp')).toBe(true);
      await api.call('thread.rename', { threadId, title: 'renamed under watch' });
      await expect.poll(() => sse.messages.filter((message) => message.event === 'event').map((message) => (message.data as StoredEvent).event.type)).toEqual(['thread.created', 'thread.renamed']);
      await expect.poll(() => sse.messages.some((message) => message.event === 'inspect' && (message.data as { command: string }).command === 'thread.rename')).toBe(true);
      sse.close();
    } finally {
      await relay.stop();
    }
  });

  it('lets a client call the API and hear events', async () => {
    const client = new TurnloomClient(await as('client'));
    const { threadId } = await client.call('thread.create', { title: 'permitted' });
    const watch = await client.watchThread(threadId);
    await client.call('thread.rename', { threadId, title: 'still permitted' });
    await expect.poll(() => watch.context.view?.title).toBe('still permitted');
    watch.close();
  });

  it('refuses a client that publishes to an internal subject, and nobody hears it', async () => {
    const engineSide = await as('engine');
    const heard: string[] = [];
    engineSide.subscribe('turnloom.v1.provider.>', (message) => heard.push(message.subject));
    const client = await as('client');
    const errors: BusError[] = [];
    client.onError((error) => errors.push(error));
    await engineSide.flush();
    client.publish('turnloom.v1.provider.th1', new TextEncoder().encode('{"forged":true}'));
    client.publish('turnloom.v1.evt.th1', new TextEncoder().encode('{"forged":true}'));
    await client.flush().catch(() => undefined);
    await expect.poll(() => errors.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
    expect(errors[0]).toMatchObject({ kind: 'permission' });
    expect(errors[0]!.message).toMatch(/permissions violation/i);
    await sleep(100);
    expect(heard).toEqual([]);
  });

  it('never answers to a reply subject that is not an inbox, so a client cannot aim the engine at a worker', async () => {
    const worker = await as('worker');
    const heard: string[] = [];
    worker.subscribe('turnloom.v1.work.>', (message) => heard.push(message.subject));
    await worker.flush();
    const client = await as('client');
    client.publish('turnloom.v1.api.health', new TextEncoder().encode('{}'), { reply: 'turnloom.v1.work.w1.interrupt' });
    client.publish('$SRV.PING', new TextEncoder().encode(''), { reply: 'turnloom.v1.work.w1.stop' });
    await client.flush();
    await sleep(200);
    expect(heard).toEqual([]);
    // A real request still gets its answer, on the client's own inbox.
    expect((await new TurnloomClient(client).call('health', {})).status).toBe('ok');
  });

  it('keeps a worker to its own subjects', async () => {
    const worker = await as('worker');
    const errors: BusError[] = [];
    worker.onError((error) => errors.push(error));
    worker.publish('turnloom.v1.api.thread.create', new TextEncoder().encode('{}'));
    await worker.flush().catch(() => undefined);
    await expect.poll(() => errors.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
    expect([...server.engine.threadsNewestFirst(null)].map(({ summary }) => summary).map((thread) => thread.title)).not.toContain('New thread');
  });
});
