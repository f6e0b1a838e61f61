import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { type NatsConnection, connect, headers as natsHeaders } from '@nats-io/transport-node';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { MSGPACK, decode, encode } from '../bus/index.ts';
import { NatsBus } from '../bus/natsBus.ts';
import { TurnloomClient } from '../client/index.ts';
import type { ProviderAdapter, ProviderEvent, StoredEvent } from '../domain/index.ts';
import { type LiveDelta, decodeLiveBatch } from '../protocol/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../services/turnloomServer.ts';
import { tempDir } from '../test/support/tempDir.ts';
import { Teardown, privateNats } from './busBench.ts';
import { type Figure, type Suite, compared, interleaved, median, percentile } from './figure.ts';

const PREFIX = 'benchpipe';
/** 50 deltas a second per turn: a fast model typing. */
const PACED_INTERVAL_MS = 20;

const sizes = (smoke: boolean) =>
  smoke
    ? { turns: 4, rounds: 1, burstDeltas: 20, pacedDeltas: 5 }
    : { turns: 100, rounds: 3, burstDeltas: 200, pacedDeltas: 150 };

/** Wall-clock milliseconds with sub-millisecond precision, comparable across the processes of one machine. */
const stamp = (): number => performance.timeOrigin + performance.now();

/** A promise opened from outside: every stream of a round waits on it. */
interface Gate {
  passed: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open!: () => void;
  const passed = new Promise<void>((resolve) => (open = resolve));
  return { passed, open };
}

/** Waits for the gate, or rejects when the call is aborted first (a worker stopping mid-round must not hang on it). */
function through(gate: Gate, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void gate.passed.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** What the provider plays in one round: how many deltas, how fast, and the gate every stream waits at. */
interface Round {
  turns: number;
  deltas: number;
  /** 0: as fast as it can, one delta per turn of the event loop (as if each came on its own network read). */
  intervalMs: number;
  /** Streams waiting at the gate. */
  arrived: number;
  gate: Gate;
  /** When the gate opened, on `performance.now()`: the paced schedule counts from it. */
  openedAt: number;
}

/**
 * A provider that streams one text segment of stamped deltas. Every stream
 * first answers (`turn.started`, `segment.started`), then waits at the
 * round's gate, so the deltas are measured with every turn streaming at once
 * and none of the turns' set-up (offer, lease, fold) in the window.
 */
class StampingProvider implements ProviderAdapter {
  readonly name = 'bench';
  round: Round | null = null;

  async startSession(): Promise<{ providerSessionId: string | null }> {
    return { providerSessionId: null };
  }

  async *stream(_request: unknown, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    const round = this.round;
    if (!round) throw new Error('bench provider: a turn started outside a round');
    yield { type: 'turn.started', responseId: null, model: 'bench' };
    yield { type: 'segment.started', segmentId: 's', kind: 'text' };
    const slot = round.arrived++;
    await through(round.gate, signal);
    // Paced turns are spread over the interval, as independent streams would be, not all due on the same millisecond.
    const phase = (slot * round.intervalMs) / round.turns;
    for (let i = 0; i < round.deltas; i++) {
      if (signal.aborted) throw signal.reason;
      if (round.intervalMs === 0) await nextTurn();
      else await sleep(Math.max(0, round.openedAt + phase + i * round.intervalMs - performance.now()), undefined, { signal });
      // `|` ends each stamp, so a coalesced durable delta splits back into the deltas it holds.
      yield { type: 'text.delta', segmentId: 's', text: `${stamp().toFixed(3)}|` };
    }
    yield { type: 'segment.completed', segmentId: 's', signature: null };
    yield { type: 'usage', usage: { input: 1, output: round.deltas, reasoning: 0, cacheRead: 0, cacheWrite: 0 } };
    yield { type: 'turn.completed', stopReason: 'stop', rawReason: 'stop' };
  }
}

/** What the client saw of one round, with the receipt time of everything it counts. */
class Observed {
  live = 0;
  durable = 0;
  /** Committed `part.delta` events: how far coalescing got. */
  durableEvents = 0;
  lastLiveAt = 0;
  lastDurableAt = 0;
  readonly liveLatencies: number[] = [];
  readonly durableLatencies: number[] = [];
  readonly finished = new Set<string>();
  readonly failures: string[] = [];

  constructor(readonly turnIds: ReadonlySet<string>) {}

  onLive(delta: LiveDelta): void {
    if (!this.turnIds.has(delta.turnId) || delta.kind !== 'text') return;
    const now = stamp();
    this.live += 1;
    this.lastLiveAt = now;
    this.liveLatencies.push(now - Number.parseFloat(delta.text));
  }

  onCommitted(stored: StoredEvent): void {
    const event = stored.event;
    if (!('turnId' in event) || event.turnId === null || !this.turnIds.has(event.turnId)) return;
    const now = stamp();
    if (event.type === 'part.delta') {
      this.durableEvents += 1;
      for (const sent of event.text.split('|')) {
        if (sent === '') continue;
        this.durable += 1;
        this.durableLatencies.push(now - Number.parseFloat(sent));
      }
      this.lastDurableAt = now;
    } else if (event.type === 'turn.completed') this.finished.add(event.turnId);
    else if (event.type === 'turn.failed' || event.type === 'turn.interrupted') {
      this.finished.add(event.turnId);
      this.failures.push(`${event.turnId}: ${event.type}`);
    }
  }
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`bench: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/**
 * The engine, its API and a local worker on one NATS connection (what
 * `turnloom serve` runs), a client on another that starts the turns, and a
 * trusted subscriber on a third that follows each thread's live and
 * committed subjects, as the inspector's relay does.
 */
class Pipeline {
  private observed: Observed | null = null;

  private constructor(
    private readonly server: TurnloomServer,
    private readonly provider: StampingProvider,
    private readonly client: TurnloomClient,
    readonly threadIds: string[],
  ) {}

  static async open(url: string, turns: number, teardown: Teardown): Promise<Pipeline> {
    const dir = teardown.keep('data folder', tempDir('turnloom-pipebench-'), (folder) => folder.remove());
    const engineBus = teardown.keep('engine connection', await NatsBus.connect({ servers: url }), (bus) => bus.close());
    const provider = new StampingProvider();
    const server = teardown.keep(
      'engine',
      await startTurnloomServer({
        bus: engineBus,
        store: LmdbStore.open(dir.path),
        prefix: PREFIX,
        providers: { bench: provider },
        defaultProvider: { name: 'bench', model: null },
        // Room for every turn at once (the default is 64).
        localWorker: { concurrency: turns + 16 },
      }),
      (s) => s.stop(),
    );
    const clientBus = teardown.keep('client connection', await NatsBus.connect({ servers: url }), (bus) => bus.close());
    const client = new TurnloomClient(clientBus, { prefix: PREFIX });
    const threadIds = await Promise.all(Array.from({ length: turns }, async (_, i) => (await client.call('thread.create', { title: `pipeline ${i}` })).threadId));
    const pipeline = new Pipeline(server, provider, client, threadIds);
    const follower = teardown.keep('follower connection', await connect({ servers: url }), (nc) => nc.close());
    for (const threadId of threadIds) {
      follower.subscribe(server.subjects.liveOf(threadId), {
        callback: (_error, msg) => {
          // One message holds what a turn typed in one iteration of the worker's event loop; each delta is timed on its own.
          for (const delta of decodeLiveBatch(msg.data)) pipeline.observed?.onLive(delta);
        },
      });
      follower.subscribe(server.subjects.events(threadId), { callback: (_error, msg) => pipeline.observed?.onCommitted(decode(msg.data, MSGPACK) as StoredEvent) });
    }
    await follower.flush();
    return pipeline;
  }

  /** The ingestion window the worker coalesces durable deltas over, as it runs (read, so the figure follows the default). */
  get flushMs(): number {
    const flushMs = (this.server.worker as unknown as { loop?: { flushMs?: unknown } } | null)?.loop?.flushMs;
    if (typeof flushMs !== 'number') throw new Error('bench: cannot read the local worker’s flush window');
    return flushMs;
  }

  /**
   * One turn on each of the first `turns` threads; the deltas flow once every
   * stream waits at the gate. Resolves with what the subscriber saw, after
   * every turn completed (and its live deltas arrived, or were given a second).
   */
  async round(turns: number, deltas: number, intervalMs: number): Promise<{ observed: Observed; openedAt: number }> {
    const round: Round = { turns, deltas, intervalMs, arrived: 0, gate: gate(), openedAt: 0 };
    this.provider.round = round;
    const started = await Promise.all(this.threadIds.slice(0, turns).map((threadId) => this.client.call('turn.start', { threadId, input: { text: 'stream' } })));
    const observed = new Observed(new Set(started.map(({ turnId }) => turnId)));
    this.observed = observed;
    await until(() => round.arrived === turns, 30_000, `${turns} turns reaching the provider`);
    round.openedAt = performance.now();
    const openedAt = stamp();
    round.gate.open();
    await until(() => observed.finished.size === turns, 120_000, `the end of ${turns} turns`);
    if (observed.failures.length > 0) throw new Error(`bench: turns did not complete: ${observed.failures.slice(0, 3).join('; ')}`);
    // Live deltas are best effort: a lost one must not hang the run, it shows in the note.
    await until(() => observed.live >= turns * deltas, 1_000, 'the last live deltas').catch(() => undefined);
    this.observed = null;
    this.provider.round = null;
    return { observed, openedAt };
  }
}

/**
 * The comparison of the throughput figure: the same number of messages,
 * with the same header and payloads of the same shape and size, published
 * on one connection to as many subjects as there are turns (one message per
 * subject per turn of the event loop, as the provider streams) and received
 * and decoded on another.
 */
async function rawFanIn(url: string, subjects: number, perSubject: number, teardown: Teardown): Promise<() => Promise<number>> {
  const publisher = teardown.keep('raw publisher', await connect({ servers: url }), (nc) => nc.close());
  const subscriber = teardown.keep('raw subscriber', await connect({ servers: url }), (nc) => nc.close());
  let received = 0;
  let lastAt = 0;
  for (let i = 0; i < subjects; i++) {
    subscriber.subscribe(`bench.live.${i}`, {
      callback: (_error, msg) => {
        decode(msg.data, MSGPACK);
        received += 1;
        lastAt = performance.now();
      },
    });
  }
  await subscriber.flush();
  return async () => {
    received = 0;
    const total = subjects * perSubject;
    const started = performance.now();
    await publishLikeTheWorker(publisher, subjects, perSubject);
    await until(() => received >= total, 60_000, `${total} raw messages`);
    return total / ((lastAt - started) / 1_000);
  };
}

async function publishLikeTheWorker(nc: NatsConnection, subjects: number, perSubject: number): Promise<void> {
  const headers = natsHeaders();
  headers.set('content-type', MSGPACK);
  const turnId = 'turn_0123456789abcdef01234567';
  for (let n = 0; n < perSubject; n++) {
    for (let i = 0; i < subjects; i++) {
      const delta: LiveDelta = { turnId, step: 1, partId: `${turnId}-s1-1`, kind: 'text', text: `${stamp().toFixed(3)}|` };
      // A batch of one: what the worker sends for a turn whose deltas each come in their own iteration of the loop.
      nc.publish(`bench.live.${i}`, encode([delta], MSGPACK), { headers });
    }
    await nextTurn();
  }
  await nc.flush();
}

export const pipelineSuite: Suite = {
  name: 'pipeline',
  async run({ smoke }): Promise<Figure[]> {
    const size = sizes(smoke);
    const teardown = new Teardown();
    try {
      const nats = await privateNats(teardown);
      const pipeline = await Pipeline.open(nats.url, size.turns, teardown);
      const raw = await rawFanIn(nats.url, size.turns, size.burstDeltas, teardown);
      const total = size.turns * size.burstDeltas;

      // One round of each unmeasured first: compiles the hot paths and loads the threads' actors.
      await pipeline.round(size.turns, size.burstDeltas, 0);
      await raw();

      // What else each round saw: the live channel's own pace, how far coalescing got, what was lost.
      const seen: Array<{ liveRate: number; perEvent: number; lost: number }> = [];
      const throughput = await interleaved(size.rounds, raw, async () => {
        const { observed, openedAt } = await pipeline.round(size.turns, size.burstDeltas, 0);
        seen.push({ liveRate: observed.live / ((observed.lastLiveAt - openedAt) / 1_000), perEvent: observed.durable / observed.durableEvents, lost: total - observed.live });
        return total / ((Math.max(observed.lastLiveAt, observed.lastDurableAt) - openedAt) / 1_000);
      });

      const durableP99s: number[] = [];
      const durableP99sAlone: number[] = [];
      const pacedSeconds: number[] = [];
      const latency = await interleaved(
        size.rounds,
        async () => {
          const { observed } = await pipeline.round(1, size.pacedDeltas, PACED_INTERVAL_MS);
          durableP99sAlone.push(percentile(observed.durableLatencies, 99));
          return percentile(observed.liveLatencies, 99);
        },
        async () => {
          const { observed, openedAt } = await pipeline.round(size.turns, size.pacedDeltas, PACED_INTERVAL_MS);
          // Longer than the pace allows means the process could not keep up with what the turns asked of it.
          pacedSeconds.push((observed.lastLiveAt - openedAt) / 1_000);
          durableP99s.push(percentile(observed.durableLatencies, 99));
          return percentile(observed.liveLatencies, 99);
        },
      );
      const window = pipeline.flushMs;

      return [
        compared(
          {
            key: 'pipelineDeltas100',
            title: `text deltas through the whole pipeline, ${size.turns} concurrent turns`,
            unit: 'deltas/s',
            value: throughput.subject,
            comparison: { label: 'plain NATS publish → subscribe, same messages', value: throughput.baseline },
            target: { on: 'ratio', op: '>=', bound: 0.5 },
            note:
              `${throughput.rounds} rounds of ${size.turns}×${size.burstDeltas} deltas, gate open to the last live and durable delta at the subscriber; ` +
              `live alone ${median(seen.map((s) => s.liveRate)).toFixed(0)}/s; ${median(seen.map((s) => s.perEvent)).toFixed(1)} deltas per committed part.delta; ` +
              `live lost ${seen.map((s) => s.lost).join(', ')}`,
          },
          smoke,
        ),
        compared(
          {
            key: 'liveP99x100',
            title: `live delta p99, provider → client, ${size.turns} paced turns`,
            unit: 'ms',
            value: latency.subject,
            comparison: { label: 'the same at 1 turn', value: latency.baseline },
            target: { on: 'ratio', op: '<=', bound: 2 },
            note:
              `${latency.rounds} rounds of ${size.pacedDeltas} deltas per turn at ${1_000 / PACED_INTERVAL_MS}/s, medians of each round's p99; ` +
              `the ${size.turns} turns took ${median(pacedSeconds).toFixed(1)} s for what the pace spreads over ${((size.pacedDeltas * PACED_INTERVAL_MS) / 1_000).toFixed(1)} s`,
          },
          smoke,
        ),
        compared(
          {
            key: 'durableP99',
            title: `durable delta p99, provider → committed event at the client, ${size.turns} paced turns`,
            unit: 'ms',
            value: median(durableP99s),
            comparison: { label: 'ingestion flush window', value: window },
            target: { on: 'value', op: '<=', bound: window + 20 },
            note:
              `same rounds as liveP99x100, every delta in each committed part.delta counted; rounds ${durableP99s.map((p) => p.toFixed(0)).join(', ')} ms; ` +
              `at 1 turn ${median(durableP99sAlone).toFixed(0)} ms`,
          },
          smoke,
        ),
      ];
    } finally {
      await teardown.run();
    }
  },
};
