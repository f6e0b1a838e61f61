import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Packr } from 'msgpackr';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects } from '../../bus/index.ts';
import { type TurnView, shardOf } from '../../domain/index.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import type { NatsClusterHandle } from '../support/natsCluster.ts';
import { tempDir } from '../support/tempDir.ts';

/** One engine of a test cluster: its process, and the id it printed when it joined. */
export interface ClusterEngine {
  process: CliProcess;
  engineId: string;
  pid: number;
  data: string;
}

const codec = new Packr({ useRecords: false });

/**
 * A turnloom cluster for one test: engines and a worker as separate
 * processes, started as a user starts them, on the test's NATS cluster and
 * a prefix of its own (so its own stream and buckets).
 */
export class TestCluster {
  readonly engines: ClusterEngine[] = [];
  readonly workers: CliProcess[] = [];
  private readonly buses: NatsBus[] = [];
  readonly dir = tempDir('turnloom-cluster-');
  readonly workspace: string;

  constructor(
    readonly nats: NatsClusterHandle,
    readonly prefix: string,
  ) {
    this.workspace = join(this.dir.path, 'workspace');
  }

  script(name: string, body: object): string {
    const path = join(this.dir.path, `${name}.json`);
    writeFileSync(path, JSON.stringify(body));
    return path;
  }

  /** An engine as `turnloom serve --cluster` starts it; `nats` (default: every node) and `path` (default: a folder of the test's) say where it connects and keeps its copy. */
  async startEngine(data = `engine${this.engines.length + 1}`, where: { nats?: string; path?: string } = {}): Promise<ClusterEngine> {
    const path = where.path ?? join(this.dir.path, data);
    const process = runCli(['serve', '--nats', where.nats ?? this.nats.url, '--cluster', '--no-worker', '--prefix', this.prefix, '--data', path]);
    await process.waitFor(/cluster: engine (e\w+) of/, 60_000);
    const engine: ClusterEngine = { process, engineId: /cluster: engine (e\w+) of/.exec(process.output())![1]!, pid: process.child.pid!, data: path };
    this.engines.push(engine);
    return engine;
  }

  async startEngines(count: number): Promise<ClusterEngine[]> {
    const started: ClusterEngine[] = [];
    for (let i = 0; i < count; i++) started.push(await this.startEngine());
    return started;
  }

  async startWorker(script: string, id = `w${this.workers.length + 1}`): Promise<CliProcess> {
    const { mkdirSync } = await import('node:fs');
    mkdirSync(this.workspace, { recursive: true });
    const worker = runCli(['worker', '--nats', this.nats.url, '--workspace', this.workspace, '--id', id, '--prefix', this.prefix, '--script', script]);
    await worker.waitFor('turnloom worker', 60_000);
    this.workers.push(worker);
    return worker;
  }

  async client(url = this.nats.url): Promise<TurnloomClient> {
    const bus = await NatsBus.connect({ servers: url.split(','), timeout: 5_000 });
    this.buses.push(bus);
    return new TurnloomClient(bus, { prefix: this.prefix, timeoutMs: 5_000 });
  }

  private async connection() {
    const bus = await NatsBus.connect({ servers: [...this.nats.urls], timeout: 5_000 });
    this.buses.push(bus);
    return bus.connection;
  }

  /** The shard the cluster's log puts the thread in (its count read from the stream, as every engine reads it). */
  async shardOf(threadId: string): Promise<number> {
    return shardOfIn(await this.connection(), this.prefix, threadId);
  }

  /** The engine the ownership bucket names for the thread's shard. */
  async ownerOf(threadId: string): Promise<ClusterEngine | undefined> {
    const kv = await new Kvm(await this.connection()).open(`TURNLOOM_${this.prefix}_OWNERS`);
    const owner = (await kv.get(`s${await this.shardOf(threadId)}`))?.string();
    return this.engines.find((engine) => engine.engineId === owner);
  }

  /** Every message of the thread's subject in the stream, in order, with who appended it. */
  async logOf(threadId: string): Promise<Array<{ seq: number; kind: string; by: string }>> {
    const nc = await this.connection();
    const js = jetstream(nc);
    const stream = `TURNLOOM_${this.prefix}_LOG`;
    const last = (await (await jetstreamManager(nc)).streams.info(stream)).state.last_seq;
    const consumer = await js.consumers.get(stream, { filter_subjects: subjects(this.prefix).log(await this.shardOf(threadId), threadId), deliver_policy: DeliverPolicy.All });
    const messages: Array<{ seq: number; kind: string; by: string }> = [];
    for (;;) {
      const batch = await consumer.fetch({ max_messages: 256, expires: 1_000 });
      let got = 0;
      for await (const message of batch) {
        got += 1;
        const record = codec.unpack(message.data) as { kind: string; by: string };
        messages.push({ seq: message.seq, kind: record.kind, by: record.by });
        if (message.seq >= last) return messages;
      }
      if (got === 0) return messages;
    }
  }

  /** The stream's leading nats-server. */
  async streamLeader(): Promise<string | undefined> {
    const jsm = await jetstreamManager(await this.connection());
    return (await jsm.streams.info(`TURNLOOM_${this.prefix}_LOG`)).cluster?.leader;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.workers.splice(0), ...this.engines.splice(0).map((engine) => engine.process)].map((process) => process.kill('SIGKILL')));
    await Promise.all(this.buses.splice(0).map((bus) => bus.close()));
  }

  async dispose(): Promise<void> {
    await this.stopAll();
    this.dir.remove();
  }
}

/** The thread's shard in the log of a cluster on `prefix`: the count is the stream's, written in its description. */
export async function shardOfIn(nc: NatsConnection, prefix: string, threadId: string): Promise<number> {
  const description = (await (await jetstreamManager(nc)).streams.info(`TURNLOOM_${prefix}_LOG`)).config.description ?? '';
  return shardOf(threadId, Number(/^turnloom log: (\d+) shards/.exec(description)![1]));
}

export const settledStates = new Set(['completed', 'failed', 'interrupted']);

/** Polls the turn until it settled, through whichever engine answers; how long the longest call took, and every failed call. */
export async function untilSettled(api: TurnloomClient, threadId: string, turnId: string, timeoutMs = 60_000): Promise<{ turn: TurnView; longestCallMs: number; failedCalls: string[] }> {
  let longestCallMs = 0;
  const failedCalls: string[] = [];
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    const started = Date.now();
    const view = await api.call('thread.get', { threadId }).then(
      (answer) => answer.thread,
      (error: unknown) => {
        failedCalls.push(String(error));
        return undefined;
      },
    );
    longestCallMs = Math.max(longestCallMs, Date.now() - started);
    const turn = view?.turns[turnId];
    if (turn && settledStates.has(turn.state)) return { turn, longestCallMs, failedCalls };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`turn ${turnId} of ${threadId} did not settle in ${timeoutMs} ms (calls that failed: ${failedCalls.join('; ')})`);
}
