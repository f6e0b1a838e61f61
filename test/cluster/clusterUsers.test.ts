import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { JSON_TYPE, encode, subjects } from '../../bus/index.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { BusError } from '../../domain/index.ts';
import { ClusterNode } from '../../services/cluster/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { Worker } from '../../services/worker/worker.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';
import { untilSettled } from './clusterFixture.ts';
import { natsUserPasswords, shippedPermissions } from '../support/natsUsers.ts';

const passwords = natsUserPasswords;
const ALICE = 'alice-token-0123456789';
const tokens = { [ALICE]: { principal: 'alice', scopes: ['read' as const, 'operate' as const, 'approve' as const], inboxPrefix: '_INBOX_client' } };
const LOG_STREAM = 'TURNLOOM_turnloom_LOG';

let nats: NatsServerHandle;
const dir = tempDir('turnloom-clusterusers-');
const buses: NatsBus[] = [];
const servers: TurnloomServer[] = [];
let worker: Worker | undefined;

async function as(user: 'engine' | 'client' | 'worker' | 'inspector'): Promise<NatsBus> {
  const bus = await NatsBus.connect({ servers: nats.url, user, pass: passwords[`TURNLOOM_${user.toUpperCase()}_PASSWORD` as keyof typeof passwords], ...(user === 'engine' ? {} : { inboxPrefix: `_INBOX_${user}` }) });
  buses.push(bus);
  return bus;
}

async function engine(name: string): Promise<TurnloomServer> {
  const bus = await as('engine');
  const store = LmdbStore.open(join(dir.path, name));
  const cluster = await ClusterNode.open({ nc: bus.connection, bus, subjects: subjects(), local: store, replicas: 1 });
  const server = await startTurnloomServer({ bus, store: cluster.store, cluster, auth: { tokens } });
  servers.push(server);
  return server;
}

/** What the server refused a user, as the errors it reports on the connection; and whether a request got any answer. */
async function tryAs(bus: NatsBus, attempt: (bus: NatsBus) => Promise<unknown>): Promise<{ refused: string[]; answered: boolean }> {
  const refused: string[] = [];
  const off = bus.onError((error: BusError) => refused.push(error.message));
  let answered = true;
  try {
    await attempt(bus);
    await bus.flush();
    await sleep(200);
  } catch {
    answered = false;
  } finally {
    off();
  }
  return { refused, answered };
}

/**
 * A cluster's engines under the shipped NATS permissions
 * (docs/nats/turnloom-permissions.conf): they run a turn through the log
 * stream and the buckets, and no other user may touch either.
 */
describe('a cluster under the shipped NATS permissions', () => {
  let threadId = '';
  beforeAll(async () => {
    nats = await startNatsServer({ config: shippedPermissions(), env: passwords });
    await engine('one');
    await engine('two');
    worker = await new Worker({ bus: await as('worker'), adapterFor: () => new ScriptedProvider({ steps: [[{ text: 'Done under the permissions.' }]] }) }).start();
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    for (const server of servers) await server.stop();
    await Promise.all(buses.map((bus) => bus.close()));
    await nats.dispose();
    dir.remove();
  });

  it('runs a turn: the engines write the stream and the buckets as the engine user', async () => {
    const api = new TurnloomClient(await as('client'), { token: ALICE });
    ({ threadId } = await api.call('thread.create', {}));
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'go' } });
    const { turn } = await untilSettled(api, threadId, turnId);
    expect(turn.state).toBe('completed');
    const health = await api.call('health', {});
    expect(health.cluster?.engines).toHaveLength(2);
  }, 60_000);

  it.each(['client', 'worker', 'inspector'] as const)('the %s user can neither write the log nor touch JetStream or the buckets', async (user) => {
    const engineBus = await as('engine');
    const jsm = await jetstreamManager(engineBus.connection);
    const before = (await jsm.streams.info(LOG_STREAM)).state.messages;
    const bus = await as(user);
    const forged = await tryAs(bus, async (b) => b.publish(`turnloom.v1.log.${threadId}`, encode({ kind: 'commit', forged: true }, JSON_TYPE)));
    expect(forged.refused.join('\n')).toMatch(/Permissions Violation for Publish to "turnloom\.v1\.log\./);
    const deleted = await tryAs(bus, (b) => b.request(`$JS.API.STREAM.DELETE.${LOG_STREAM}`, new Uint8Array(), { timeoutMs: 1_000 }));
    // A request on a subject the user may not publish on is refused by the server, so nothing answers it.
    expect(deleted.answered).toBe(false);
    const owned = await tryAs(bus, async (b) => b.publish(`$KV.TURNLOOM_turnloom_OWNERS.${threadId}`, encode('mallory', JSON_TYPE)));
    expect(owned.refused.join('\n')).toMatch(/Permissions Violation for Publish to "\$KV\.TURNLOOM_turnloom_OWNERS/);
    const relayed = await tryAs(bus, async (b) => b.publish(`turnloom.v1.engine.cast.hello`, encode({}, JSON_TYPE)));
    expect(relayed.refused.join('\n')).toMatch(/Permissions Violation for Publish to "turnloom\.v1\.engine\.cast\.hello"/);
    // Nothing reached the stream.
    expect((await jsm.streams.info(LOG_STREAM)).state.messages).toBe(before);
  });
});
