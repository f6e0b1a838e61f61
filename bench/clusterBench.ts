import { join } from 'node:path';
import { NatsBus } from '../bus/natsBus.ts';
import { TurnloomClient } from '../client/index.ts';
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
}

const CONCURRENCY = 16;

async function deploy(teardown: Teardown, label: string, url: string, prefix: string, engines: number, cluster: boolean, threads: number): Promise<Deployment> {
  const dir = teardown.keep(`${label} folders`, tempDir('turnloom-bench-cluster-'), (folder) => folder.remove());
  for (let index = 0; index < engines; index++) {
    const args = ['serve', '--nats', url, '--no-worker', '--prefix', prefix, '--data', join(dir.path, `engine${index}`), ...(cluster ? ['--cluster'] : [])];
    const engine: CliProcess = teardown.keep(`${label} engine ${index + 1}`, runCli(args), (process) => process.kill('SIGTERM'));
    await engine.waitFor('data:', 60_000);
  }
  const bus = teardown.keep(`${label} client`, await NatsBus.connect({ servers: url.split(','), timeout: 5_000 }), (connection) => connection.close());
  const client = new TurnloomClient(bus, { prefix, timeoutMs: 30_000 });
  const ids: string[] = [];
  for (let i = 0; i < threads; i++) ids.push((await client.call('thread.create', { title: `bench ${i}` })).threadId);
  return { label, client, threads: ids };
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

/**
 * The cluster's cost and what it buys, measured side by side in one run: one
 * engine keeping its log in LMDB (the single-engine default), one engine
 * keeping it in a JetStream stream on one nats-server (R1), and three engines
 * on a 3-node nats-server cluster (R3), every engine a process of its own and
 * the client in this one. Rounds are interleaved; each figure is the median
 * of its rounds, as a ratio to the first deployment. On two cores the three
 * engines and three nats-servers share the same two CPUs, so these figures
 * show the price of replication, not the scaling more machines would bring
 * (docs/cluster.md says what bounds that).
 */
export const clusterSuite: Suite = {
  name: 'cluster',
  async run({ smoke, onFigure }) {
    const teardown = new Teardown();
    const rounds = smoke ? 1 : 3;
    const seconds = smoke ? 0.3 : 3;
    const samples = smoke ? 5 : 200;
    // Nothing runs the turns started: each thread's queue (100 inputs at most) must hold what a round starts on it.
    const threads = smoke ? 32 : 256;
    try {
      const single = teardown.keep('nats-server', await startNatsServer({ jetstream: true }), (server) => server.dispose());
      const three = teardown.keep('nats cluster', await startNatsCluster(3), (nats) => nats.dispose());
      const deployments = [
        await deploy(teardown, '1 engine, LMDB', single.url, 'benchlmdb', 1, false, threads),
        await deploy(teardown, '1 engine, JetStream R1', single.url, 'benchr1', 1, true, threads),
        await deploy(teardown, '3 engines, JetStream R3', three.url, 'benchr3', 3, true, threads),
      ];
      const rates = deployments.map(() => [] as number[]);
      const latencies = deployments.map(() => [] as number[]);
      for (let round = 0; round < rounds; round++) {
        for (const [index, deployment] of deployments.entries()) {
          rates[index]!.push(await startRate(deployment, seconds));
          latencies[index]!.push(await commitLatency(deployment, samples));
        }
      }
      const figures: Figure[] = [];
      const emit = (figure: Figure) => {
        figures.push(figure);
        onFigure?.(figure);
      };
      const keys = ['Lmdb', 'R1', 'R3x3'];
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
      return figures;
    } finally {
      await teardown.run();
    }
  },
};
