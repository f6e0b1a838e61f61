import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { NatsBus } from '../bus/natsBus.ts';
import { TurnloomClient } from '../client/index.ts';
import { shardOf } from '../domain/index.ts';
import { type CliProcess, runCli } from '../test/support/cliProcess.ts';
import { startNatsCluster } from '../test/support/natsCluster.ts';
import { startNatsServer } from '../test/support/natsServer.ts';
import { tempDir } from '../test/support/tempDir.ts';
import { Teardown, timedRate } from './busBench.ts';
import { type Figure, type Suite, absolute, compared, median, percentile } from './figure.ts';

/** One deployment under test: its engines run as `turnloom serve` processes; the bench is their client. */
interface Deployment {
  label: string;
  client: TurnloomClient;
  threads: string[];
  /** The engines' process ids, for their CPU time. */
  pids: number[];
}

const CONCURRENCY = 16;

async function deploy(teardown: Teardown, label: string, url: string, prefix: string, engines: number, cluster: boolean, threads: number): Promise<Deployment> {
  const dir = teardown.keep(`${label} folders`, tempDir('turnloom-bench-cluster-'), (folder) => folder.remove());
  const pids: number[] = [];
  for (let index = 0; index < engines; index++) {
    const args = ['serve', '--nats', url, '--no-worker', '--prefix', prefix, '--data', join(dir.path, `engine${index}`), ...(cluster ? ['--cluster'] : [])];
    const engine: CliProcess = teardown.keep(`${label} engine ${index + 1}`, runCli(args), (process) => process.kill('SIGTERM'));
    await engine.waitFor('data:', 60_000);
    pids.push(engine.child.pid!);
  }
  const bus = teardown.keep(`${label} client`, await NatsBus.connect({ servers: url.split(','), timeout: 5_000 }), (connection) => connection.close());
  const client = new TurnloomClient(bus, { prefix, timeoutMs: 30_000 });
  const ids: string[] = [];
  for (let i = 0; i < threads; i++) ids.push((await client.call('thread.create', { title: `bench ${i}` })).threadId);
  return { label, client, threads: ids, pids };
}

/**
 * CPU time of processes, in ms, every thread's (the main one, libuv's pool,
 * V8's helpers): the first field of each task's `/proc/<pid>/task/<tid>/schedstat`,
 * in nanoseconds, so a few hundred commands measure well where
 * `/proc/<pid>/stat`'s 10-ms ticks would not.
 */
function cpuMs(pids: readonly number[]): number {
  let nanos = 0;
  for (const pid of pids) {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        nanos += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // A thread that ended between the listing and the read.
      }
    }
  }
  return nanos / 1e6;
}

/** JetStream consumers alive on one deployment's streams (its log's, its KV buckets'), every engine's together. */
async function consumerCount(url: string, prefix: string): Promise<number> {
  const nc = await connect({ servers: url.split(','), timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    let count = 0;
    for await (const stream of jsm.streams.list()) if (stream.config.name.includes(`TURNLOOM_${prefix}_`)) count += stream.state.consumer_count;
    return count;
  } finally {
    await nc.close();
  }
}

/** `turn.start`s per second from concurrent clients, spread over the deployment's threads (no worker: each is one durable command). */
async function startRate(deployment: Deployment, seconds: number): Promise<number> {
  let next = 0;
  return timedRate(seconds, CONCURRENCY, async () => {
    const threadId = deployment.threads[next++ % deployment.threads.length]!;
    await deployment.client.call('turn.start', { threadId, input: { text: 'go' } });
  });
}

/** The median time one client waits for a durable command (a rename) to be answered, one at a time. */
async function commitLatency(deployment: Deployment, count: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const threadId = deployment.threads[i % deployment.threads.length]!;
    const started = performance.now();
    await deployment.client.call('thread.rename', { threadId, title: `renamed ${i}` });
    samples.push(performance.now() - started);
  }
  return percentile(samples, 50);
}

/** How many threads the takeover's victim holds when it dies: the figure (a smoke run makes a few hundred). */
const TAKEOVER_THREADS = 10_000;

/**
 * How long the cluster takes to serve again every shard of an engine killed
 * (kill -9) while it holds `count` threads: one engine alone makes them (so
 * it holds every shard), two more join, and it dies before they were handed
 * any. From the kill, a client that never spoke to it asks for one thread
 * of each shard until every one is answered: the first request for a shard
 * finds nobody on the dead engine's subjects and the engine it reached takes
 * the shard, reading its log (the new owners never copied it). Also when the
 * ownership directory, by the sweep alone, named a live engine for every
 * shard (a membership TTL after the kill, at the earliest).
 */
async function takeover(teardown: Teardown, url: string, count: number): Promise<{ servedMs: number; directoryMs: number; shards: number; threads: number }> {
  const prefix = 'benchtk';
  const dir = teardown.keep('takeover folders', tempDir('turnloom-bench-takeover-'), (folder) => folder.remove());
  const start = async (name: string) => {
    const engine = teardown.keep(`takeover ${name}`, runCli(['serve', '--nats', url, '--no-worker', '--cluster', '--prefix', prefix, '--data', join(dir.path, name)]), (process) => process.kill('SIGKILL'));
    await engine.waitFor('data:', 60_000);
    return engine;
  };
  const victim = await start('victim');
  const bus = teardown.keep('takeover client', await NatsBus.connect({ servers: url.split(','), timeout: 5_000 }), (connection) => connection.close());
  const maker = new TurnloomClient(bus, { prefix, timeoutMs: 30_000 });
  const made: string[] = [];
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (made.length < count) {
        const index = made.push('') - 1;
        made[index] = (await maker.call('thread.create', { title: 'idle' })).threadId;
      }
    }),
  );
  await start('second');
  await start('third');
  const shards = Number(/(\d+) shards/.exec(victim.output())![1]);
  const oneOfEach = new Map<number, string>();
  for (const threadId of made) if (!oneOfEach.has(shardOf(threadId, shards))) oneOfEach.set(shardOf(threadId, shards), threadId);
  const owners = await new Kvm(bus.connection).open(`TURNLOOM_${prefix}_OWNERS`);
  const victimId = /cluster: engine (e\w+) of/.exec(victim.output())![1]!;
  const killedAt = performance.now();
  await victim.kill('SIGKILL');
  let directoryMs = Number.NaN;
  const directory = (async () => {
    for (;;) {
      let left = 0;
      for (let shard = 0; shard < shards; shard++) if ((await owners.get(`s${shard}`))?.string() === victimId) left += 1;
      if (left === 0) return (directoryMs = performance.now() - killedAt);
      await sleep(50);
    }
  })();
  // A client that never spoke to the dead engine: its requests go through the shared subjects.
  const asker = new TurnloomClient(bus, { prefix, timeoutMs: 30_000 });
  await Promise.all([...oneOfEach.values()].map((threadId) => asker.call('thread.get', { threadId })));
  const servedMs = performance.now() - killedAt;
  await directory;
  return { servedMs, directoryMs, shards: oneOfEach.size, threads: made.length };
}

/**
 * The cluster's cost and what it buys, measured side by side in one run: one
 * engine keeping its log in LMDB (the single-engine default), one engine
 * keeping it in a JetStream stream on one nats-server (R1), and one and three
 * engines on a 3-node nats-server cluster (R3), every engine a process of its
 * own and the client in this one. Rounds are interleaved; each figure is the
 * median of its rounds, as a ratio to the first deployment. On two cores the
 * engines and three nats-servers share the same two CPUs, so throughput here
 * shows the price of replication, not the scaling more machines would bring;
 * the engines' CPU per command is what scaling out is made of (three engines
 * against one on the same cluster), and docs/cluster.md projects it.
 */
export const clusterSuite: Suite = {
  name: 'cluster',
  async run({ smoke, onFigure }) {
    const teardown = new Teardown();
    const rounds = smoke ? 1 : 3;
    const seconds = smoke ? 0.3 : 3;
    // Enough renames in a smoke run too for the engines' CPU to show in 10-ms ticks.
    const samples = smoke ? 30 : 200;
    // Nothing runs the turns started: each thread's queue (100 inputs at most) must hold what a round starts on it.
    const threads = smoke ? 32 : 256;
    try {
      const single = teardown.keep('nats-server', await startNatsServer({ jetstream: true }), (server) => server.dispose());
      const three = teardown.keep('nats cluster', await startNatsCluster(3), (nats) => nats.dispose());
      const deployments = [
        await deploy(teardown, '1 engine, LMDB', single.url, 'benchlmdb', 1, false, threads),
        await deploy(teardown, '1 engine, JetStream R1', single.url, 'benchr1', 1, true, threads),
        // One engine on the same 3-node cluster: what three engines cost beyond the replication both pay.
        await deploy(teardown, '1 engine, JetStream R3', three.url, 'benchr3one', 1, true, threads),
        await deploy(teardown, '3 engines, JetStream R3', three.url, 'benchr3', 3, true, threads),
      ];
      const rates = deployments.map(() => [] as number[]);
      const latencies = deployments.map(() => [] as number[]);
      const cpu = deployments.map(() => [] as number[]);
      for (let round = 0; round < rounds; round++) {
        for (const [index, deployment] of deployments.entries()) {
          rates[index]!.push(await startRate(deployment, seconds));
          const before = cpuMs(deployment.pids);
          latencies[index]!.push(await commitLatency(deployment, samples));
          cpu[index]!.push((cpuMs(deployment.pids) - before) / samples);
        }
      }
      // Idle, the cluster should hold a few consumers an engine, and no more as time passes.
      const consumersBefore = await consumerCount(three.url, 'benchr3');
      await sleep(smoke ? 1_000 : 60_000);
      const consumersAfter = await consumerCount(three.url, 'benchr3');
      const taken = await takeover(teardown, three.url, smoke ? 100 : TAKEOVER_THREADS);
      const figures: Figure[] = [];
      const emit = (figure: Figure) => {
        figures.push(figure);
        onFigure?.(figure);
      };
      const keys = ['Lmdb', 'R1', 'R3x1', 'R3x3'];
      const baseRate = median(rates[0]!);
      const baseLatency = median(latencies[0]!);
      for (const [index, deployment] of deployments.entries()) {
        const rate = median(rates[index]!);
        const latency = median(latencies[index]!);
        const note = `${CONCURRENCY} clients, ${threads} threads, ${rounds} interleaved rounds`;
        if (index === 0) {
          emit(absolute({ key: `clusterStart${keys[index]}`, title: `turn.start/s, ${deployment.label}`, unit: '/s', value: rate, target: null, note }, smoke));
          emit(absolute({ key: `clusterCommit${keys[index]}`, title: `durable command p50, ${deployment.label}`, unit: 'ms', value: latency, target: null, note: `one client, ${samples} renames a round` }, smoke));
          continue;
        }
        emit(compared({ key: `clusterStart${keys[index]}`, title: `turn.start/s, ${deployment.label}`, unit: '/s', value: rate, comparison: { label: deployments[0]!.label, value: baseRate }, target: null, note }, smoke));
        emit(
          compared(
            { key: `clusterCommit${keys[index]}`, title: `durable command p50, ${deployment.label}`, unit: 'ms', value: latency, comparison: { label: deployments[0]!.label, value: baseLatency }, target: null, note: `one client, ${samples} renames a round` },
            smoke,
          ),
        );
      }
      const [lmdbCpu, r1Cpu, oneCpu, threeCpu] = cpu.map((samples) => median(samples));
      emit(absolute({ key: 'clusterCpuR1', title: 'engine CPU per durable command, 1 engine, JetStream R1', unit: 'ms', value: r1Cpu!, target: null, note: `schedstat of every thread over ${samples} renames a round, ${rounds} rounds` }, smoke));
      emit(absolute({ key: 'clusterCpuR3x1', title: 'engine CPU per durable command, 1 engine, JetStream R3', unit: 'ms', value: oneCpu!, target: null, note: `schedstat of every thread over ${samples} renames a round, ${rounds} rounds` }, smoke));
      emit(
        compared(
          {
            key: 'clusterCpuR3x3',
            title: 'engine CPU per durable command, 3 engines against 1, JetStream R3 (all three engines)',
            unit: 'ms',
            value: threeCpu!,
            comparison: { label: deployments[2]!.label, value: oneCpu! },
            target: { on: 'ratio', op: '<=', bound: 1.3 },
            note: `schedstat of every thread of the engines over ${samples} renames a round; against 1 engine on R1 (${r1Cpu!.toFixed(2)} ms): ${(threeCpu! / r1Cpu!).toFixed(2)}×; 1 engine on LMDB: ${lmdbCpu!.toFixed(2)} ms`,
          },
          smoke,
        ),
      );
      emit(
        absolute(
          { key: 'clusterConsumersIdle', title: 'JetStream consumers per engine, 3 engines idle', unit: 'consumers', value: consumersAfter / 3, target: { on: 'value', op: '<=', bound: 8 }, note: `${consumersBefore} in all when the load stopped, ${consumersAfter} after ${smoke ? 1 : 60} s idle` },
          smoke,
        ),
      );
      emit(
        absolute(
          {
            key: 'clusterTakeover',
            title: `takeover of an engine killed holding ${taken.threads.toLocaleString('en')} threads, until each of its shards answers`,
            unit: 'ms',
            value: taken.servedMs,
            target: { on: 'value', op: '<=', bound: 5_000 },
            note: `3 engines on R3, ${taken.shards} shards, the new owners never copied them; the directory named live owners for all ${(taken.directoryMs / 1_000).toFixed(1)} s after the kill`,
          },
          smoke,
        ),
      );
      return figures;
    } finally {
      await teardown.run();
    }
  },
};
