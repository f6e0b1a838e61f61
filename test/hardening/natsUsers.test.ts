import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, type BusMessage } from '../../domain/index.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { JSON_TYPE, MSGPACK, decode, encode } from '../../bus/index.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { decodeLiveBatch } from '../../protocol/liveBatch.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { Worker } from '../../services/worker/worker.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { openRelayPage } from '../support/relayPage.ts';
import { tempDir } from '../support/tempDir.ts';
import { natsUserPasswords, shippedPermissions } from '../support/natsUsers.ts';

/**
 * What a second NATS user can do to turnloom with the shipped permissions
 * (docs/nats/turnloom-permissions.conf), tried as an attacker would: a
 * `worker` of the default environment against a thread of another one, and
 * the `client` user against `client2`'s inbox.
 */

const passwords = natsUserPasswords;
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const tokens = {
  [ALICE]: { principal: 'alice', scopes: ['read' as const, 'operate' as const, 'approve' as const], inboxPrefix: '_INBOX_client' },
  [BOB]: { principal: 'bob', scopes: ['read' as const, 'operate' as const, 'approve' as const], inboxPrefix: '_INBOX_client2' },
};
const SECRET_ENV = 'gpu';

let nats: NatsServerHandle;
let server: TurnloomServer;
const dir = tempDir('turnloom-natsusers-');
const buses: Bus[] = [];
const users = { engine: 'engine', client: 'client', client2: 'client2', worker: 'worker', worker_gpu: 'worker_gpu', inspector: 'inspector' } as const;
async function as(user: keyof typeof users): Promise<NatsBus> {
  const bus = await NatsBus.connect({
    servers: nats.url,
    user,
    pass: passwords[`TURNLOOM_${user.toUpperCase()}_PASSWORD` as keyof typeof passwords],
    ...(user === 'engine' ? {} : { inboxPrefix: `_INBOX_${user}` }),
  });
  buses.push(bus);
  return bus;
}

const json = (value: unknown) => encode(value, JSON_TYPE);
/** A request as any NATS client can send one, on a subject and with a reply subject of the caller's choosing. */
async function ask(bus: Bus, subject: string, body: unknown, headers: Record<string, string> = {}): Promise<{ result?: unknown; error?: { code: string } } | 'no answer'> {
  try {
    const reply = await bus.request(subject, json(body), { headers: { 'content-type': JSON_TYPE, ...headers }, timeoutMs: 1_000 });
    return decode(reply.data, JSON_TYPE) as { result?: unknown; error?: { code: string } };
  } catch {
    return 'no answer';
  }
}

beforeAll(async () => {
  nats = await startNatsServer({ config: shippedPermissions(), env: passwords });
  server = await startTurnloomServer({ bus: await as('engine'), store: LmdbStore.open(dir.path), auth: { tokens } });
});
afterAll(async () => {
  await server.stop();
  await Promise.all(buses.map((bus) => bus.close()));
  await nats.dispose();
  dir.remove();
});

describe('a worker user and the threads of another environment', () => {
  it('cannot type into the live text of another environment’s thread: neither forged deltas nor garbage reach its owner’s watch, while its own worker’s do', async () => {
    const alice = new TurnloomClient(await as('client'), { token: ALICE });
    const { threadId } = await alice.call('thread.create', { title: 'gpu work', environment: SECRET_ENV });
    const watch = await alice.watchThread(threadId);
    const typed: string[] = [];
    watch.onLive((delta) => typed.push(delta.text));
    // Alice's own watch, read raw: what the engine delivers to her inbox, whatever it is.
    const raw: BusMessage[] = [];
    const inbox = alice.bus.inbox();
    alice.bus.subscribe(inbox, (message) => raw.push(message));
    await alice.bus.flush();
    await alice.call('thread.watch', { threadId, deliverTo: inbox });

    // The thread's own worker, as its environment's user, types in two bursts with a pause between.
    const gpu = await new Worker({
      bus: await as('worker_gpu'),
      workerId: 'gpu-worker',
      environment: SECRET_ENV,
      adapterFor: () => new ScriptedProvider({ steps: [[{ text: 'legit one ' }, { wait: 1_500 }, { text: 'legit two' }]] }),
    }).start();
    const { turnId } = await alice.call('turn.start', { threadId, input: { text: 'go' } });
    await expect.poll(() => typed.join(''), { timeout: 10_000 }).toBe('legit one ');

    const attacker = await as('worker');
    const errors: string[] = [];
    attacker.onError((error) => errors.push(error.kind));
    const forged = encode([{ turnId, step: 1, partId: `${turnId}-s1-1`, kind: 'text', text: ' FORGED ' }], MSGPACK);
    const garbage = new TextEncoder().encode('not msgpack at all \u0001\u0002');
    // The old subject, the attacker's own environment with a guessed channel, and the thread's environment.
    for (const subject of [`turnloom.v1.live.${threadId}`, `turnloom.v1.live.default.${threadId}.${'0'.repeat(32)}`, `turnloom.v1.live.${SECRET_ENV}.${threadId}.${'0'.repeat(32)}`]) {
      attacker.publish(subject, forged, { headers: { 'content-type': MSGPACK } });
      attacker.publish(subject, garbage, { headers: { 'content-type': MSGPACK } });
    }
    // Nor can it take over the thread's worker by its id.
    const hijack = await ask(attacker, 'turnloom.v1.worker.default.hello', { workerId: 'gpu-worker', environment: 'default', workspace: null, host: 'evil', pid: 1, startTicks: null, capacity: 1, running: [] });
    expect(hijack).toMatchObject({ error: { code: 'conflict' } });
    await attacker.flush().catch(() => undefined);

    await expect.poll(async () => (await alice.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 15_000 }).toBe('completed');
    await expect.poll(() => typed.join(''), { timeout: 5_000 }).toBe('legit one legit two');
    // Publishing on another environment's subjects is refused by the server itself.
    expect(errors).toContain('permission');
    const delivered = raw.filter((message) => message.headers['turnloom-kind'] === 'live').flatMap((message) => decodeLiveBatch(message.data));
    expect(delivered.map((delta) => delta.text).join('')).toBe('legit one legit two');
    watch.close();
    await gpu.stop();
  });

  it('cannot say hello for another environment, claim its turn, or read its thread', async () => {
    const alice = new TurnloomClient(await as('client'), { token: ALICE });
    const { threadId } = await alice.call('thread.create', { title: 'secret', environment: SECRET_ENV });
    const { turnId } = await alice.call('turn.start', { threadId, input: { text: 'my secret plan' } });
    const attacker = await as('worker');
    const key = randomBytes(32).toString('hex');
    const hello = (environment: string) => ({ workerId: 'evil', environment, workspace: null, host: 'evil', pid: 1, startTicks: null, capacity: 1, running: [] });
    const claim = { workerId: 'evil', threadId, turnId, claimId: 'evil-claim', keyHash: createHash('sha256').update(key).digest('hex') };
    const lease = { workerId: 'evil', threadId, turnId, token: 3, key };
    const answers: Record<string, unknown> = {};
    for (const base of ['turnloom.v1.worker', 'turnloom.v1.worker.default', `turnloom.v1.worker.${SECRET_ENV}`]) {
      answers[`${base}.hello`] = await ask(attacker, `${base}.hello`, hello(SECRET_ENV));
      answers[`${base}.claim`] = await ask(attacker, `${base}.claim`, claim);
      answers[`${base}.thread.get`] = await ask(attacker, `${base}.thread.get`, lease);
      answers[`${base}.thread.events`] = await ask(attacker, `${base}.thread.events`, { ...lease, after: 0 });
    }
    // A hello of its own environment, then a claim and reads there, of the other environment's thread.
    answers['own hello'] = await ask(attacker, 'turnloom.v1.worker.default.hello', hello('default'));
    answers['own claim'] = await ask(attacker, 'turnloom.v1.worker.default.claim', claim);
    answers['own read'] = await ask(attacker, 'turnloom.v1.worker.default.thread.get', lease);

    expect(JSON.stringify(answers)).not.toContain('my secret plan');
    expect(answers).toMatchObject({
      // Not its subjects: the server refuses to carry the request at all.
      'turnloom.v1.worker.hello': 'no answer',
      [`turnloom.v1.worker.${SECRET_ENV}.hello`]: 'no answer',
      [`turnloom.v1.worker.${SECRET_ENV}.claim`]: 'no answer',
      // Its subjects, another environment in the body: the engine refuses.
      'turnloom.v1.worker.default.hello': { error: { code: 'forbidden' } },
      'own hello': { result: { leases: [] } },
      'own claim': { error: { code: 'not_found' } },
      'own read': { error: { code: 'not_found' } },
    });
    // Not one lease was handed out: the turn still waits for a worker of its own environment.
    const turn = (await alice.call('thread.get', { threadId })).thread.turns[turnId]!;
    expect(turn.lease).toBeNull();
    expect(turn.leases).toBe(0);
  });
});

describe('a client user and another user’s inbox', () => {
  it('cannot have its answers, or a watch, delivered into another user’s inbox; into its own they still come', async () => {
    const bob = await as('client2');
    const heard: string[] = [];
    bob.subscribe('_INBOX_client2.>', (message) => heard.push(message.subject));
    await bob.flush();
    const alice = new TurnloomClient(await as('client'), { token: ALICE });
    const { threadId } = await alice.call('thread.create', { title: 'alice writes into bob’s inbox' });
    const headers = { 'content-type': JSON_TYPE, authorization: `Bearer ${ALICE}` };
    alice.bus.publish('turnloom.v1.api.thread.get', json({ threadId }), { headers, reply: '_INBOX_client2.victim' });
    alice.bus.publish('turnloom.v1.api.thread.watch', json({ threadId, deliverTo: '_INBOX_client2.spam' }), { headers, reply: '_INBOX_client2.victim' });
    // Without a token, or with bob's, it still cannot (it does not hold bob's token; nobody tokenless writes into a bound inbox).
    alice.bus.publish('turnloom.v1.api.health', json({}), { headers: { 'content-type': JSON_TYPE }, reply: '_INBOX_client2.victim' });
    alice.bus.publish('turnloom.v1.api.thread.list', json({}), { headers: { 'content-type': JSON_TYPE, authorization: 'Bearer wrong-token-0123456789' }, reply: '_INBOX_client2.victim' });
    await alice.bus.flush();
    await sleep(300);
    // Answered in its own inbox, a watch aimed at bob's is refused.
    await expect(alice.call('thread.watch', { threadId, deliverTo: '_INBOX_client2.spam' })).rejects.toMatchObject({ code: 'forbidden' });
    await alice.call('thread.rename', { threadId, title: 'an event for the watch, if there were one' });
    await sleep(300);
    expect(heard).toEqual([]);

    // What was dropped shows in the service's stats, which discovery answers anyone (its content is the server's own).
    const stats = JSON.parse(new TextDecoder().decode((await alice.bus.request('$SRV.STATS.turnloom', new Uint8Array(), { timeoutMs: 2_000 })).data)) as {
      endpoints: Array<{ name: string; num_errors: number; last_error?: string }>;
    };
    expect(stats.endpoints.find((endpoint) => endpoint.name === 'thread_get')).toMatchObject({ last_error: 'forbidden' });
    expect(stats.endpoints.find((endpoint) => endpoint.name === 'thread_list')).toMatchObject({ last_error: 'forbidden' });

    // Bob, in his own inbox space, is answered and follows his thread as ever.
    const bobClient = new TurnloomClient(bob, { token: BOB });
    const { threadId: bobs } = await bobClient.call('thread.create', { title: 'bob’s' });
    const watch = await bobClient.watchThread(bobs);
    await bobClient.call('thread.rename', { threadId: bobs, title: 'still bob’s' });
    await expect.poll(() => watch.context.view?.title).toBe('still bob’s');
    watch.close();
  });
});

describe('the processes as a user starts them, under the shipped permissions and an auth file that binds inboxes', () => {
  it('runs a turn end to end: serve as engine, worker as worker, a client as client, inspect as inspector', async () => {
    const own = await startNatsServer({ config: shippedPermissions(), env: passwords });
    const folder = tempDir('turnloom-natsusers-cli-');
    const inspectorToken = 'inspector-token-0123456789';
    const authFile = join(folder.path, 'auth.json');
    writeFileSync(authFile, JSON.stringify({ tokens: { ...tokens, [inspectorToken]: { principal: 'ops', scopes: ['read', 'admin'], inboxPrefix: '_INBOX_inspector' } } }));
    const scriptFile = join(folder.path, 'script.json');
    writeFileSync(scriptFile, JSON.stringify({ steps: [[{ text: 'done by a worker user' }]] }));
    const started: CliProcess[] = [];
    const start = (args: string[], env: Record<string, string>) => {
      const cli = runCli(args, { cwd: folder.path, env });
      started.push(cli);
      return cli;
    };
    const connected: Bus[] = [];
    try {
      await start(['serve', '--nats', own.url, '--nats-user', 'engine', '--auth', authFile, '--no-worker', '--data', join(folder.path, 'data')], { TURNLOOM_NATS_PASS: passwords.TURNLOOM_ENGINE_PASSWORD }).waitFor('data:');
      await start(['worker', '--nats', own.url, '--nats-user', 'worker', '--inbox-prefix', '_INBOX_worker', '--workspace', folder.path, '--script', scriptFile], {
        TURNLOOM_NATS_PASS: passwords.TURNLOOM_WORKER_PASSWORD,
      }).waitFor('environment default');
      const inspect = start(['inspect', '--nats', own.url, '--nats-user', 'inspector', '--inbox-prefix', '_INBOX_inspector', '--port', '0'], {
        TURNLOOM_NATS_PASS: passwords.TURNLOOM_INSPECTOR_PASSWORD,
        TURNLOOM_TOKEN: inspectorToken,
      });
      await inspect.waitFor(/\?key=/);

      const bus = await NatsBus.connect({ servers: own.url, user: 'client', pass: passwords.TURNLOOM_CLIENT_PASSWORD, inboxPrefix: '_INBOX_client' });
      connected.push(bus);
      const alice = new TurnloomClient(bus, { token: ALICE });
      const { threadId } = await alice.call('thread.create', { title: 'under the shipped permissions' });
      const watch = await alice.watchThread(threadId);
      const typed: string[] = [];
      watch.onLive((delta) => typed.push(delta.text));
      const { turnId } = await alice.call('turn.start', { threadId, input: { text: 'go' } });
      await expect.poll(() => watch.context.view?.turns[turnId]?.state, { timeout: 30_000 }).toBe('completed');
      expect(watch.context.view!.turns[turnId]!.messages[1].parts[0]!.text).toBe('done by a worker user');
      expect(typed.join('')).toBe('done by a worker user');
      watch.close();

      // The inspector's page, opened with the printed key, lists alice's thread through its own token and inbox.
      const page = await openRelayPage(/http:\/\/127\.0\.0\.1:\d+\/\?key=[A-Za-z0-9_-]+/.exec(inspect.output())![0]);
      const listed = (await (await page.fetch('api/thread.list', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { result: { threads: Array<{ id: string }> } };
      expect(listed.result.threads.map((thread) => thread.id)).toContain(threadId);
    } finally {
      await Promise.all(started.map((cli) => cli.kill('SIGTERM')));
      await Promise.all(connected.map((bus) => bus.close()));
      await own.dispose();
      folder.remove();
    }
  }, 120_000);
});
