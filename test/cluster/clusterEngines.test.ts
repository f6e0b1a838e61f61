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

  const ownerOf = async (prefix: string, threadId: string) => {
    const owners = await new Kvm((await connect()).connection).open(`TURNLOOM_${prefix}_OWNERS`);
    const entry = await owners.get(threadId);
    return entry?.operation === 'PUT' ? entry.string() : null;
  };

  it('an idle thread is let go; an engine that stops lets go of its threads and another takes what is open', async () => {
    const prefix = `pi${randomUUID().slice(0, 8)}`;
    const first = await clusterEngine(prefix);
    const api = new TurnloomClient(await connect(), { prefix });
    const { threadId: idle } = await api.call('thread.create', { title: 'idle' });
    const { threadId: busy } = await api.call('thread.create', { title: 'busy' });
    const { turnId } = await api.call('turn.start', { threadId: busy, input: { text: 'wait for a worker' } });
    expect(await ownerOf(prefix, idle)).toBe(first.engineId);
    // Passivated by its engine with nothing open: its owner key goes at the next sweep.
    expect(first.server.engine.passivate(idle)).toBe(true);
    await expect.poll(() => ownerOf(prefix, idle), { timeout: 5_000 }).toBeNull();
    // The open turn keeps its thread owned, passivated or not.
    first.server.engine.passivate(busy);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(await ownerOf(prefix, busy)).toBe(first.engineId);

    const second = await clusterEngine(prefix);
    await servers.shift()!.stop();
    // The stopped engine let go of its threads; the other one takes what is open within a sweep.
    await expect.poll(() => ownerOf(prefix, busy), { timeout: 5_000 }).toBe(second.engineId);
    const worker = await new Worker({ bus: await connect(), prefix, adapterFor: () => new ScriptedProvider({ steps: [[{ text: 'Done by the second engine.' }]] }) }).start();
    try {
      await expect.poll(async () => (await api.call('thread.get', { threadId: busy })).thread.turns[turnId]!.state, { timeout: 20_000 }).toBe('completed');
    } finally {
      await worker.stop();
    }
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
    await clusterEngine(prefix);
    await clusterEngine(prefix);
    const api = new TurnloomClient(await connect(), { prefix });
    const created: string[] = [];
    for (let i = 0; i < 12; i++) created.push((await api.call('thread.create', { title: `before ${i}` })).threadId);
    const joined = await clusterEngine(prefix);
    const owners = await new Kvm((await connect()).connection).open(`TURNLOOM_${prefix}_OWNERS`);
    // New threads go to whichever engine their request lands on, a random member of the queue group: a third, give or take.
    // A second round of 30 only when the first gave the joined engine fewer than 3 (a loaded machine can skew one round; thread.list below pages at most 100).
    const after: string[] = [];
    let ownedByJoined = 0;
    for (let round = 0; round < 2 && ownedByJoined < 3; round++) {
      const batch: string[] = [];
      for (let i = 0; i < 30; i++) batch.push((await api.call('thread.create', { title: `after ${round}.${i}` })).threadId);
      after.push(...batch);
      ownedByJoined += (await Promise.all(batch.map(async (threadId) => (await owners.get(threadId))?.string()))).filter((owner) => owner === joined.engineId).length;
    }
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

  it('a log message that keeps failing is followed again after a growing wait, not every 250 ms with a new consumer', async () => {
    const prefix = `pf${randomUUID().slice(0, 8)}`;
    const failures: number[] = [];
    const log = { ...silentLogger, error: (_fields: object, message: string) => void (message.startsWith('could not take a log message in') && failures.push(performance.now())) };
    const bus = await connect();
    const cluster = await ClusterNode.open({ nc: bus.connection, bus, subjects: subjects(prefix), local: LmdbStore.open(join(dir.path, randomUUID())), replicas: 1, log });
    servers.push(await startTurnloomServer({ bus, prefix, store: cluster.store, cluster }));
    // A commit no machine accepts: the tailer never skips it, so it fails there each time it follows the stream again.
    const poison = { kind: 'commit', by: 'elsewhere', commandId: 'cmd-poison', at: Date.now(), events: [{ threadSeq: 1, event: { type: 'no.such.event' } }], receipt: null };
    await jetstream(bus.connection).publish(subjects(prefix).log('thr_poison'), new Packr({ useRecords: false }).pack(poison));
    await expect.poll(() => failures.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(5);
    const gaps = failures.slice(1).map((at, index) => at - failures[index]!);
    expect(gaps.at(-1)!, `gaps ${gaps.map(Math.round).join(', ')} ms`).toBeGreaterThanOrEqual(1_500);
  });

  it("a dead owner's idle thread is not taken over: its key goes, and the thread is taken on first use", async () => {
    const prefix = `po${randomUUID().slice(0, 8)}`;
    const engine = await clusterEngine(prefix);
    const api = new TurnloomClient(await connect(), { prefix });
    const { threadId } = await api.call('thread.create', { title: 'idle' });
    const owners = await new Kvm((await connect()).connection).open(`TURNLOOM_${prefix}_OWNERS`);
    // As a killed engine leaves it: its name on an idle thread, and no membership key (the engine that made the thread lets it go, as taken).
    await owners.put(threadId, 'e_dead0000');
    await expect.poll(async () => (await owners.get(threadId))?.operation ?? 'none', { timeout: 10_000 }).not.toBe('PUT');
    const marks = async () => {
      const jsm = await jetstreamManager((await connect()).connection);
      return (await jsm.streams.info(`TURNLOOM_${prefix}_LOG`, { subjects_filter: subjects(prefix).log(threadId) })).state.subjects?.[subjects(prefix).log(threadId)] ?? 0;
    };
    const before = await marks();
    await api.call('thread.rename', { threadId, title: 'used again' });
    expect((await owners.get(threadId))?.string()).toBe(engine.engineId);
    expect(await marks()).toBeGreaterThan(before);
  });
});

