import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { NatsBus, subjects } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { PrefixTaken } from '../../services/api/engineClaim.ts';
import { ClusterNode } from '../../services/cluster/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from '../support/tempDir.ts';

/**
 * Engines of a cluster in this process, each on a connection of its own to
 * the suite's nats-server (JetStream, one replica): what they share with a
 * single engine, and how new threads spread over them.
 */
describe('engines of a cluster on one nats-server', () => {
  const dir = tempDir('turnloom-cluster-engines-');
  const servers: TurnloomServer[] = [];
  const buses: NatsBus[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
  });
  const connect = async () => {
    const bus = await NatsBus.connect({ servers: inject('natsUrl') });
    buses.push(bus);
    return bus;
  };
  const clusterEngine = async (prefix: string) => {
    const bus = await connect();
    const store = LmdbStore.open(join(dir.path, randomUUID()));
    const cluster = await ClusterNode.open({ nc: bus.connection, bus, subjects: subjects(prefix), local: store, replicas: 1 });
    const server = await startTurnloomServer({ bus, prefix, store: cluster.store, cluster });
    servers.push(server);
    return { server, engineId: cluster.engineId };
  };
  const singleEngine = async (prefix: string) => {
    const server = await startTurnloomServer({ bus: await connect(), prefix, store: LmdbStore.open(join(dir.path, randomUUID())) });
    servers.push(server);
    return server;
  };

  it('a single engine is refused on a prefix a cluster serves, and a cluster engine on one a single engine serves', async () => {
    const clustered = `pc${randomUUID().slice(0, 8)}`;
    await clusterEngine(clustered);
    await clusterEngine(clustered);
    await expect(singleEngine(clustered)).rejects.toThrow(/engines of a turnloom cluster .* already serve the subject prefix/);
    const single = `ps${randomUUID().slice(0, 8)}`;
    await singleEngine(single);
    await expect(clusterEngine(single)).rejects.toBeInstanceOf(PrefixTaken);
  });

  it('a joining engine takes its share of new threads, and thread.list pages every thread once through any engine', async () => {
    const prefix = `pj${randomUUID().slice(0, 8)}`;
    await clusterEngine(prefix);
    await clusterEngine(prefix);
    const api = new TurnloomClient(await connect(), { prefix });
    const created: string[] = [];
    for (let i = 0; i < 12; i++) created.push((await api.call('thread.create', { title: `before ${i}` })).threadId);
    const joined = await clusterEngine(prefix);
    const after: string[] = [];
    for (let i = 0; i < 30; i++) after.push((await api.call('thread.create', { title: `after ${i}` })).threadId);
    created.push(...after);
    const owners = await new Kvm((await connect()).connection).open(`TURNLOOM_${prefix}_OWNERS`);
    const ownedByJoined = (await Promise.all(after.map(async (threadId) => (await owners.get(threadId))?.string()))).filter((owner) => owner === joined.engineId);
    // New threads go to whichever engine their request lands on: a third of 30, give or take.
    expect(ownedByJoined.length).toBeGreaterThan(2);

    // Each engine's copy lists every thread once it has followed the stream that far (milliseconds).
    await expect.poll(async () => (await api.call('thread.list', { limit: 100 })).threads.length, { timeout: 10_000 }).toBe(created.length);
    // Pages of five, each answered by whichever engine: every thread once, newest first, while new ones keep coming.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.call('thread.list', { limit: 5, ...(cursor ? { cursor } : {}) });
      seen.push(...page.threads.map((thread) => thread.id));
      if (seen.length === 10) await api.call('thread.create', { title: 'while paging' });
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual([...created].reverse());

    // Every engine answers service discovery, as an instance of one service.
    const nc = (await connect()).connection;
    const inbox = `_INBOX.${randomUUID().replaceAll('-', '')}`;
    const answers: Array<{ name: string; id: string }> = [];
    const subscription = nc.subscribe(inbox, {
      callback: (_error, message) => {
        answers.push(message.json());
      },
    });
    nc.publish(`$SRV.PING.${prefix}`, new Uint8Array(), { reply: inbox });
    await expect.poll(() => answers.length, { timeout: 5_000 }).toBe(3);
    subscription.unsubscribe();
    expect(new Set(answers.map((answer) => answer.name))).toEqual(new Set([prefix]));
    expect(new Set(answers.map((answer) => answer.id)).size).toBe(3);
  });
});
