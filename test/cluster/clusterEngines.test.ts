import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Packr } from 'msgpackr';
import { KvWatchInclude, Kvm } from '@nats-io/kv';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { subjects } from '../../bus/index.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { silentLogger } from '../../domain/index.ts';
import { PrefixTaken } from '../../services/api/engineClaim.ts';
import { ClusterNode } from '../../services/cluster/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { Worker } from '../../services/worker/worker.ts';
import { tempDir } from '../support/tempDir.ts';
import { preferredEngine } from '../../services/cluster/placement.ts';
import { shardOfIn } from './clusterFixture.ts';

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
    return { server, engineId: cluster.engineId, owned: () => cluster.health().shards.owned };
  };
  const singleEngine = async (prefix: string) => {
    const server = await startTurnloomServer({ bus: await connect(), prefix, store: LmdbStore.open(join(dir.path, randomUUID())) });
    servers.push(server);
    return server;
  };

  const shardOf = async (prefix: string, threadId: string) => shardOfIn((await connect()).connection, prefix, threadId);
  const ownerOf = async (prefix: string, threadId: string) => {
    const owners = await new Kvm((await connect()).connection).open(`TURNLOOM_${prefix}_OWNERS`);
    const entry = await owners.get(`s${await shardOf(prefix, threadId)}`);
    return entry?.operation === 'PUT' ? entry.string() : null;
  };

  it('an engine alone owns every shard; a joining one is handed its share; one that stops lets go, and another takes what is open', async () => {
    const prefix = `pi${randomUUID().slice(0, 8)}`;
    const first = await clusterEngine(prefix);
    await expect.poll(() => first.owned(), { timeout: 10_000 }).toBe(64);
    const api = new TurnloomClient(await connect(), { prefix });
    const { threadId: busy } = await api.call('thread.create', { title: 'busy' });
    const { turnId } = await api.call('turn.start', { threadId: busy, input: { text: 'wait for a worker' } });
    expect(await ownerOf(prefix, busy)).toBe(first.engineId);

    // Once the new engine stayed a membership TTL, the first hands it the idle shards rendezvous hashing gives it: a few a sweep.
    const second = await clusterEngine(prefix);
    await expect.poll(() => second.owned(), { timeout: 20_000 }).toBeGreaterThanOrEqual(20);
    expect(first.owned() + second.owned()).toBeLessThanOrEqual(64);
    // The shard with an open turn stays where it is.
    expect(await ownerOf(prefix, busy)).toBe(first.engineId);

    await servers.shift()!.stop();
    // The stopped engine let go of its shards; the other takes them within a sweep, open turn and all.
    await expect.poll(() => ownerOf(prefix, busy), { timeout: 5_000 }).toBe(second.engineId);
    await expect.poll(() => second.owned(), { timeout: 5_000 }).toBe(64);
    const worker = await new Worker({ bus: await connect(), prefix, adapterFor: () => new ScriptedProvider({ steps: [[{ text: 'Done by the second engine.' }]] }) }).start();
    try {
      await expect.poll(async () => (await api.call('thread.get', { threadId: busy })).thread.turns[turnId]!.state, { timeout: 20_000 }).toBe('completed');
    } finally {
      await worker.stop();
    }
  });

  it('each engine copies and folds only the shards it owns', async () => {
    const prefix = `pk${randomUUID().slice(0, 8)}`;
    const engines = [await clusterEngine(prefix), await clusterEngine(prefix), await clusterEngine(prefix)];
    // Once the shards have spread (each engine holds what rendezvous hashing gives it), new threads land on one engine each.
    const shares = engines.map(({ engineId }) => Array.from({ length: 64 }, (_, shard) => preferredEngine(shard, engines.map((engine) => engine.engineId))).filter((preferred) => preferred === engineId).length);
    await expect.poll(() => engines.map(({ owned }) => owned()), { timeout: 30_000 }).toEqual(shares);
    const api = new TurnloomClient(await connect(), { prefix });
    const created: string[] = [];
    for (let i = 0; i < 30; i++) created.push((await api.call('thread.create', { title: `t${i}` })).threadId);
    let copies = 0;
    for (const threadId of created) {
      const owner = await ownerOf(prefix, threadId);
      for (const { server, engineId } of engines) {
        // Only the owner's folder has ever seen the thread: the others neither fold nor keep it.
        const held = server.engine.summary(threadId) !== undefined;
        expect(held, `${threadId} on ${engineId} (owner ${owner})`).toBe(engineId === owner);
        if (held) copies += 1;
      }
    }
    expect(copies).toBe(created.length);
  });

  it("a single engine's folder is refused as a cluster engine's copy, and a copy as a single engine's folder", async () => {
    const singleFolder = join(dir.path, randomUUID());
    const single = await startTurnloomServer({ bus: await connect(), prefix: `pf${randomUUID().slice(0, 8)}`, store: LmdbStore.open(singleFolder) });
    await new TurnloomClient(await connect(), { prefix: single.subjects.prefix }).call('thread.create', {});
    await single.stop();
    const bus = await connect();
    const reused = LmdbStore.open(singleFolder);
    await expect(ClusterNode.open({ nc: bus.connection, bus, subjects: subjects(`pf${randomUUID().slice(0, 8)}`), local: reused, replicas: 1 })).rejects.toThrow(/holds a single engine's threads/);
    await reused.close();

    const prefix = `pg${randomUUID().slice(0, 8)}`;
    const copyFolder = join(dir.path, randomUUID());
    const copy = LmdbStore.open(copyFolder);
    const cluster = await ClusterNode.open({ nc: bus.connection, bus, subjects: subjects(prefix), local: copy, replicas: 1 });
    const member = await startTurnloomServer({ bus, prefix, store: cluster.store, cluster });
    await member.stop();
    await expect(startTurnloomServer({ bus: await connect(), prefix: `ph${randomUUID().slice(0, 8)}`, store: LmdbStore.open(copyFolder) })).rejects.toThrow(/copy of a cluster's log/);
    // Refused, it let go of the folder: it opens again.
    await LmdbStore.open(copyFolder).close();
  });

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
    const engines = [await clusterEngine(prefix), await clusterEngine(prefix)];
    const api = new TurnloomClient(await connect(), { prefix });
    const created: string[] = [];
    for (let i = 0; i < 12; i++) created.push((await api.call('thread.create', { title: `before ${i}` })).threadId);
    const joined = await clusterEngine(prefix);
    engines.push(joined);
    // Its share of the shards (what rendezvous hashing gives it among the three) comes to it once it stayed a membership TTL: new threads in them are its.
    const share = Array.from({ length: 64 }, (_, shard) => preferredEngine(shard, engines.map(({ engineId }) => engineId))).filter((engineId) => engineId === joined.engineId).length;
    await expect.poll(() => joined.owned(), { timeout: 20_000 }).toBe(share);
    const after: string[] = [];
    for (let i = 0; i < 30; i++) after.push((await api.call('thread.create', { title: `after ${i}` })).threadId);
    const ownedByJoined = (await Promise.all(after.map((threadId) => ownerOf(prefix, threadId)))).filter((owner) => owner === joined.engineId).length;
    created.push(...after);
    expect(ownedByJoined, `the joined engine owns ${ownedByJoined} of ${after.length} new threads`).toBeGreaterThanOrEqual(3);

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

  it('thread.list right after writes shows them all, whichever engine each request lands on', async () => {
    const prefix = `rw${randomUUID().slice(0, 8)}`;
    await clusterEngine(prefix);
    await clusterEngine(prefix);
    await clusterEngine(prefix);
    const api = new TurnloomClient(await connect(), { prefix });
    // Bursts of writes landing on every engine, each list asked the moment the last write of its burst is acknowledged.
    const missed: string[] = [];
    for (let round = 0; round < 6; round++) {
      const created = await Promise.all(Array.from({ length: 20 }, (_, i) => api.call('thread.create', { title: `read ${round}.${i}` })));
      const listed = new Set((await api.call('thread.list', { limit: 100 })).threads.map((thread) => thread.id));
      missed.push(...created.map(({ threadId }) => threadId).filter((threadId) => !listed.has(threadId)));
    }
    expect(missed, 'threads a list right after their creation left out').toEqual([]);
  });

  it('idle engines hold a few JetStream consumers each, not more with every membership round', async () => {
    const prefix = `pc${randomUUID().slice(0, 8)}`;
    const engines = [await clusterEngine(prefix), await clusterEngine(prefix), await clusterEngine(prefix)];
    const nc = (await connect()).connection;
    const jsm = await jetstreamManager(nc);
    const consumers = async () => {
      let count = 0;
      for await (const stream of jsm.streams.list()) if (stream.config.name.includes(prefix)) count += stream.state.consumer_count;
      return count;
    };
    // Membership rounds counted on the bucket itself: each engine renews its key three times a TTL.
    const renewals = new Map<string, number>();
    const watch = await (await new Kvm(nc).open(`TURNLOOM_${prefix}_ENGINES`)).watch({ include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const entry of watch) if (entry.operation === 'PUT') renewals.set(entry.key, (renewals.get(entry.key) ?? 0) + 1);
    })();
    const rounds = (count: number) => expect.poll(() => Math.min(...engines.map(({ engineId }) => renewals.get(engineId) ?? 0)), { timeout: 30_000 }).toBeGreaterThanOrEqual(count);
    await rounds(2);
    const early = await consumers();
    await rounds(6);
    const late = await consumers();
    watch.stop();
    // Listing the members every half TTL made a consumer a listing: ~6 a second for three engines.
    expect(late, `${early} consumers after 2 rounds, ${late} after 6`).toBeLessThanOrEqual(early);
    expect(late).toBeLessThanOrEqual(8 * engines.length + 1);
  });

  it('a shard whose log holds a message no machine accepts is taken again after a growing wait, not every sweep with a new consumer', async () => {
    const prefix = `pf${randomUUID().slice(0, 8)}`;
    const failures: number[] = [];
    const log = { ...silentLogger, warn: (_fields: object, message: string) => void (message === 'could not take a shard' && failures.push(performance.now())) };
    const bus = await connect();
    const cluster = await ClusterNode.open({ nc: bus.connection, bus, subjects: subjects(prefix), local: LmdbStore.open(join(dir.path, randomUUID())), replicas: 1, log });
    servers.push(await startTurnloomServer({ bus, prefix, store: cluster.store, cluster }));
    const ownedShards = () => cluster.health().shards.owned;
    await expect.poll(ownedShards, { timeout: 10_000 }).toBe(64);
    // A commit no machine accepts, in a shard the engine then has to read again (its key deleted, as by an operator).
    const shard = await shardOf(prefix, 'thr_poison');
    const poison = { kind: 'commit', by: 'elsewhere', commandId: 'cmd-poison', at: Date.now(), events: [{ threadSeq: 1, event: { type: 'no.such.event' } }], receipt: null };
    await jetstream(bus.connection).publish(subjects(prefix).log(shard, 'thr_poison'), new Packr({ useRecords: false }).pack(poison));
    const owners = await new Kvm(bus.connection).open(`TURNLOOM_${prefix}_OWNERS`);
    await owners.delete(`s${shard}`);
    await expect.poll(() => failures.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
    const gaps = failures.slice(1).map((at, index) => at - failures[index]!);
    expect(gaps.at(-1)!, `gaps ${gaps.map(Math.round).join(', ')} ms`).toBeGreaterThanOrEqual(3_000);
    // Every other shard is served all along.
    expect(ownedShards()).toBe(63);
  });

  it("a dead owner's shard is taken by the live engine it belongs to", async () => {
    const prefix = `po${randomUUID().slice(0, 8)}`;
    const engine = await clusterEngine(prefix);
    const api = new TurnloomClient(await connect(), { prefix });
    const { threadId } = await api.call('thread.create', { title: 'idle' });
    const owners = await new Kvm((await connect()).connection).open(`TURNLOOM_${prefix}_OWNERS`);
    // As a killed engine leaves it: its name on a shard, and no membership key.
    await owners.put(`s${await shardOf(prefix, threadId)}`, 'e_dead0000');
    await expect.poll(() => ownerOf(prefix, threadId), { timeout: 10_000 }).toBe(engine.engineId);
    await api.call('thread.rename', { threadId, title: 'used again' });
    expect((await api.call('thread.get', { threadId })).thread.title).toBe('used again');
  });
});
