import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTick } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { open } from 'lmdb';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { InProcessHub } from '../bus/index.ts';
import { TurnloomClient } from '../client/index.ts';
import type { CommitBatch, DomainEvent, ProviderEvent } from '../domain/index.ts';
import type { Command } from '../services/engine/commands.ts';
import { Engine, type EngineOptions } from '../services/engine/engine.ts';
import { StepIngestion } from '../services/runtime/stepIngestion.ts';
import { startTurnloomServer } from '../services/turnloomServer.ts';
import { type Figure, type Suite, absolute, compared, interleaved, median } from './figure.ts';
import { turnCommands } from './storeBench.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const thisFile = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------- helpers

/** Runs `use` with a temp folder that is removed afterwards, whatever happens. */
async function inScratch<T>(label: string, use: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), `turnloom-bench-${label}-`));
  try {
    return await use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An engine on a real LMDB store in `dir`, closed (with its store) afterwards. */
async function withEngine<T>(dir: string, options: Partial<EngineOptions>, use: (engine: Engine) => Promise<T>): Promise<T> {
  const engine = await Engine.open({ ...options, store: LmdbStore.open(dir) });
  try {
    return await use(engine);
  } finally {
    await engine.close();
  }
}

/** Runs `task` over `items`, `concurrency` at a time (like that many clients). */
async function lanes<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, n) => `${prefix}${n}`);

let serial = 0;
const commandId = () => `bench-${process.pid}-${++serial}`;

const createThread = (threadId: string): Command => ({ type: 'thread.create', commandId: commandId(), threadId, title: 'bench', workspace: null, owner: null });
const startTurn = (threadId: string, turnId: string): Command => ({
  type: 'turn.start',
  commandId: commandId(),
  threadId,
  turnId,
  input: { text: 'fix the race in the login test' },
  provider: { name: 'scripted', model: null },
});
const record = (threadId: string, turnId: string, events: DomainEvent[]): Command => ({ type: 'turn.record', commandId: commandId(), threadId, turnId, events });

const usage = { input: 100, output: 20, reasoning: 0, cacheRead: 0, cacheWrite: 0 };

/** A worker's events from picking the turn up to a text part of its first step open for deltas; the thread's first turn also starts the session. */
const openStep = (turnId: string, partId: string, session = true): DomainEvent[] => [
  ...(session ? [{ type: 'session.started', providerSessionId: null } as const] : []),
  { type: 'turn.started', turnId },
  { type: 'step.started', turnId, step: 1, digest: null },
  { type: 'response.started', turnId, step: 1, responseId: null, model: null },
  { type: 'part.started', turnId, partId, step: 1, kind: 'text' },
];

/** What the step loop records once an answer that asked for no tools is complete. */
const endTurn = (turnId: string): DomainEvent[] => [
  { type: 'step.finished', turnId, step: 1, outcome: 'stop', finishReason: 'stop', usage, error: null },
  { type: 'turn.completed', turnId, stopReason: 'stop' },
];

/** …and from the open text part to the end of the turn. */
const closeTurn = (turnId: string, partId: string): DomainEvent[] => [
  { type: 'part.completed', turnId, partId, signature: null },
  { type: 'response.completed', turnId, step: 1, stopReason: 'stop', rawReason: 'end_turn' },
  ...endTurn(turnId),
];

const delta = (turnId: string, partId: string, text: string): DomainEvent => ({ type: 'part.delta', turnId, partId, text });

/** A new thread with a turn streaming into its text part `${turnId}-p1`. */
async function openStreamingTurn(engine: Engine, threadId: string, turnId: string): Promise<string> {
  const partId = `${turnId}-p1`;
  await engine.submit(createThread(threadId));
  await engine.submit(startTurn(threadId, turnId));
  await engine.submit(record(threadId, turnId, openStep(turnId, partId)));
  return partId;
}

/** Mean milliseconds per call of `task` over `count` calls, one after another. */
async function meanMs(count: number, task: (n: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  for (let n = 0; n < count; n++) await task(n);
  return (performance.now() - started) / count;
}

const spread = (values: readonly number[], digits = 1) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

// ---------------------------------------------------------------- 1. one command

/** An `LmdbStore` that also keeps every batch it commits, so the same writes can be replayed on a store alone. */
function recordingStore(dir: string): { store: LmdbStore; batches: CommitBatch[] } {
  const store = LmdbStore.open(dir);
  const batches: CommitBatch[] = [];
  const commit = store.commit.bind(store);
  store.commit = (batch) => {
    batches.push(batch);
    return commit(batch);
  };
  return { store, batches };
}

/**
 * `turn.start` on a thread with no open turn, one client, one command at a
 * time, beside the least a durable write can cost: one put and commit on a
 * raw LMDB environment opened as `LmdbStore` opens it (`open({ path, maxDbs })`,
 * default sync commits) and committed as it commits (a synchronous write
 * transaction, then `flushed`). The note adds the third side: the engine's own commit
 * batches replayed on a bare `LmdbStore`, which splits the gap into what the
 * store writes and what the engine computes.
 */
async function engineCommand(smoke: boolean): Promise<Figure> {
  const perRound = smoke ? 5 : 150;
  const rounds = smoke ? 1 : 5;
  return inScratch('command', (engineDir) =>
    inScratch('raw', (rawDir) =>
      inScratch('replay', async (replayDir) => {
        const env = open({ path: rawDir, maxDbs: 16 });
        const log = env.openDB<unknown, number>({ name: 'log' });
        const { store, batches } = recordingStore(engineDir);
        const engine = await Engine.open({ store });
        const replay = LmdbStore.open(replayDir);
        try {
          let key = 0;
          let round = 0;
          const storeOnly: number[] = [];
          const bare = () =>
            meanMs(perRound, async () => {
              const seq = ++key;
              // About the size of the stored `turn.requested` event.
              const value = { seq, threadId: 'thr_bench', threadSeq: seq, commandId: `cmd-${seq}`, at: Date.now(), event: { type: 'turn.requested', turnId: `turn-${seq}`, input: { text: 'fix the race in the login test' } } };
              env.transactionSync(() => log.put(seq, value));
              await env.flushed;
            });
          const command = async () => {
            // Threads made (untimed) just before, as a client would: created, loaded, no open turn.
            const threads = ids(`cmd${++round}-`, perRound);
            await lanes(threads, 16, (threadId) => engine.submit(createThread(threadId)));
            const creates = batches.splice(0);
            const ms = await meanMs(perRound, (n) => engine.submit(startTurn(threads[n]!, `${threads[n]!}-t1`)));
            // The same writes on the store alone (the creates untimed, as above).
            await lanes(creates, 16, (batch) => replay.commit(batch));
            const starts = batches.splice(0);
            storeOnly.push(await meanMs(starts.length, (n) => replay.commit(starts[n]!)));
            return ms;
          };
          const { baseline, subject } = await interleaved(rounds, bare, command);
          return compared(
            {
              key: 'engineCommand',
              title: 'turn.start, in-process engine, LMDB',
              unit: 'µs',
              value: subject * 1_000,
              comparison: { label: 'raw LMDB put + commit', value: baseline * 1_000 },
              target: { on: 'ratio', op: '<=', bound: 1.3 },
              note: `mean of ${perRound} commands one at a time per round, median of ${rounds} interleaved rounds; threads loaded, no open turn; the engine's own commit batches replayed on LmdbStore alone: ${(median(storeOnly) * 1_000).toFixed(0)} µs`,
            },
            smoke,
          );
        } finally {
          await engine.close();
          await replay.close();
          await env.close();
        }
      }),
    ),
  );
}

// ---------------------------------------------------------------- 2. a commit into a large turn

/**
 * One `turn.record` carrying one short delta, into a turn whose text part
 * already holds 800 KB, beside the same into a turn that just started: what
 * a long answer costs each further write.
 */
async function commitLargeTurn(smoke: boolean): Promise<Figure> {
  const textChars = smoke ? 40_000 : 800_000;
  const chunk = 20_000;
  const commits = smoke ? 3 : 40;
  const rounds = smoke ? 1 : 5;
  return inScratch('large', (dir) =>
    withEngine(dir, {}, async (engine) => {
      const large = { threadId: 'large', turnId: 'large-t1', partId: '' };
      large.partId = await openStreamingTurn(engine, large.threadId, large.turnId);
      for (let written = 0; written < textChars; written += chunk) {
        await engine.submit(record(large.threadId, large.turnId, [delta(large.turnId, large.partId, 'x'.repeat(chunk))]));
      }
      const small = 'and one more sentence of the answer. ';
      let round = 0;
      const into = (threadId: string, turnId: string, partId: string) => meanMs(commits, () => engine.submit(record(threadId, turnId, [delta(turnId, partId, small)])));
      const { baseline, subject } = await interleaved(
        rounds,
        async () => {
          const threadId = `fresh${++round}`;
          const partId = await openStreamingTurn(engine, threadId, `${threadId}-t1`);
          return into(threadId, `${threadId}-t1`, partId);
        },
        () => into(large.threadId, large.turnId, large.partId),
      );
      return compared(
        {
          key: 'commitLargeTurn',
          title: `small delta into a ${Math.round(textChars / 1_000)} KB turn`,
          unit: 'ms',
          value: subject,
          comparison: { label: 'into a fresh turn', value: baseline },
          target: { on: 'ratio', op: '<=', bound: 1.2 },
          note: `mean of ${commits} turn.record commits (one ${small.length}-char part.delta each) per round, median of ${rounds} interleaved rounds`,
        },
        smoke,
      );
    }),
  );
}

// ---------------------------------------------------------------- 3. memory of idle threads

interface HeapSample {
  threads: number;
  heapPerThreadBytes: number;
  rssBytes: number;
  forcedGc: boolean;
}

/** Heap in use once garbage is collected (as far as this process can force it). */
async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let n = 0; n < 3; n++) {
    gc?.();
    await nextTick();
  }
  return process.memoryUsage().heapUsed;
}

/** `threads` threads after one completed agent turn each (the events of `turnCommands`, written as create, start and one record). */
async function buildIdleThreads(dir: string, threads: number): Promise<void> {
  await withEngine(dir, { maxLoadedThreads: 64 }, (engine) =>
    lanes(ids('idle', threads), 32, async (threadId) => {
      const [create, start, ...records] = turnCommands(threadId);
      await engine.submit(create!);
      await engine.submit(start!);
      const events = records.flatMap((command) => (command.type === 'turn.record' ? command.events : []));
      await engine.submit(record(threadId, (start as { turnId: string }).turnId, events));
    }),
  );
}

/**
 * Loads the `threads` threads of `folder` (a copy of it) into a fresh engine
 * (each restored from its snapshot and log by a rename, the lightest
 * command), then measures what they hold: the heap with all of them loaded
 * minus the heap once they are all passivated, on the same store, so only
 * what the loaded threads keep alive is counted.
 */
async function sampleIdleThreads(folder: string, threads: number): Promise<HeapSample> {
  return inScratch('heap', async (dir) => {
    cpSync(folder, dir, { recursive: true });
    // Nothing passivated behind our back: no cap reached, no idle sweep.
    return withEngine(dir, { maxLoadedThreads: threads + 1, idleMs: 3_600_000 }, async (engine) => {
      const threadIds = ids('idle', threads);
      const load = (some: string[]) => lanes(some, 32, (threadId) => engine.submit({ type: 'thread.rename', commandId: commandId(), threadId, title: 'idle' }));
      // Both paths run once before the readings, so code compiled and caches filled on first use count in neither.
      const warm = threadIds.slice(0, 16);
      await load(warm);
      for (const threadId of warm) engine.passivate(threadId);
      await load(threadIds);
      if (engine.loadedThreadCount !== threads) throw new Error(`expected ${threads} loaded threads, found ${engine.loadedThreadCount}`);
      const loaded = await settledHeap();
      const rssBytes = process.memoryUsage().rss;
      for (const threadId of threadIds) engine.passivate(threadId);
      const passive = await settledHeap();
      return { threads, heapPerThreadBytes: (loaded - passive) / threads, rssBytes, forcedGc: typeof (globalThis as { gc?: unknown }).gc === 'function' };
    });
  });
}

/** One sample in a child `node --expose-gc`, so garbage can be collected before each reading and this process's own heap stays out. */
function sampleInChild(folder: string, threads: number): Promise<HeapSample> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', thisFile, '--idle-threads-child', folder, String(threads)], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`idle-threads child exited with ${code}: ${err.trim().split('\n').slice(-3).join(' ')}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1)!) as HeapSample);
      } catch (error) {
        reject(error);
      }
    });
  });
}

async function idleThreads(smoke: boolean): Promise<Figure[]> {
  const threads = smoke ? 200 : 5_000;
  const rounds = smoke ? 1 : 3;
  return inScratch('idle', async (folder) => {
    await buildIdleThreads(folder, threads);
    const samples: HeapSample[] = [];
    let how = 'each round in a child node --expose-gc, GC forced before each reading';
    for (let round = 0; round < rounds; round++) {
      try {
        samples.push(await sampleInChild(folder, threads));
      } catch (error) {
        // No child (or it failed): measure here, with GC only if this process was started with --expose-gc.
        samples.push(await sampleIdleThreads(folder, threads));
        how = `in the bench process (the child failed: ${error instanceof Error ? error.message : String(error)}), ${samples.at(-1)!.forcedGc ? 'GC forced' : 'GC not forced, so an upper bound'}`;
      }
    }
    const heapKiB = samples.map((sample) => sample.heapPerThreadBytes / 1_024);
    const rssMiB = samples.map((sample) => sample.rssBytes / 1_048_576);
    return [
      absolute(
        {
          key: 'idleThreadHeap',
          title: 'heap per loaded idle thread',
          unit: 'KiB',
          value: median(heapKiB),
          target: { on: 'value', op: '<=', bound: 8 },
          note: `${threads.toLocaleString('en')} threads with one completed agent turn each, loaded from disk; heap loaded − heap passivated; ${how}; median of ${rounds} (${spread(heapKiB, 2)})`,
        },
        smoke,
      ),
      absolute(
        {
          key: 'rss5000',
          title: `RSS, ${threads.toLocaleString('en')} loaded threads`,
          unit: 'MiB',
          value: median(rssMiB),
          target: null,
          note: `whole child process (node, tsx, LMDB pages mapped), median of ${rounds} (${spread(rssMiB)})`,
        },
        smoke,
      ),
    ];
  });
}

// ---------------------------------------------------------------- 4. durable events of a streamed reply

/** A provider answering `deltas` text deltas of `size` characters; each arrives on its own turn of the event loop, as fast as they come. */
async function* streamedReply(deltas: number, size: number): AsyncGenerator<ProviderEvent> {
  yield { type: 'turn.started', responseId: 'resp-bench', model: 'bench' };
  yield { type: 'segment.started', segmentId: 's1', kind: 'text' };
  for (let n = 0; n < deltas; n++) {
    await nextTick();
    yield { type: 'text.delta', segmentId: 's1', text: String(n % 10).repeat(size) };
  }
  yield { type: 'segment.completed', segmentId: 's1', signature: null };
  yield { type: 'usage', usage: { ...usage, output: deltas } };
  yield { type: 'turn.completed', stopReason: 'stop', rawReason: 'end_turn' };
}

/** What the worker's outbox does for the step loop: each non-empty batch is one `turn.record`, written in order, one at a time. */
class SerialRecorder {
  private tail: Promise<unknown> = Promise.resolve();
  private failure: unknown = null;

  constructor(
    private readonly engine: Engine,
    private readonly threadId: string,
    private readonly turnId: string,
  ) {}

  push(events: DomainEvent[]): void {
    if (events.length === 0) return;
    this.tail = this.tail.then(() => this.engine.submit(record(this.threadId, this.turnId, events))).catch((error: unknown) => (this.failure ??= error));
  }

  async flushed(): Promise<void> {
    await this.tail;
    if (this.failure) throw this.failure;
  }
}

/**
 * One step of a turn as `streamStep` in turnLoop.ts runs it: every provider
 * event goes through the real `StepIngestion` (default flush settings, the
 * ones worker.ts passes: 1 s, 24,000 characters), what is due is written
 * after each event and by a 50 ms ticker, the rest when the answer ends.
 * Resolves with the events the thread's log holds for the turn.
 */
async function durableEventsOfReply(engine: Engine, threadId: string, deltas: number, size: number): Promise<DomainEvent[]> {
  const turnId = `${threadId}-t1`;
  await engine.submit(createThread(threadId));
  await engine.submit(startTurn(threadId, turnId));
  await engine.submit(record(threadId, turnId, [{ type: 'session.started', providerSessionId: null }, { type: 'turn.started', turnId }, { type: 'step.started', turnId, step: 1, digest: null }]));
  const ingestion = new StepIngestion({ turnId, step: 1 });
  const recorder = new SerialRecorder(engine, threadId, turnId);
  const ticker = setInterval(() => recorder.push(ingestion.take()), 50);
  try {
    for await (const event of streamedReply(deltas, size)) {
      ingestion.accept(event);
      recorder.push(ingestion.take());
    }
    ingestion.closeUnfinished();
    recorder.push(ingestion.drain());
  } finally {
    clearInterval(ticker);
  }
  await recorder.flushed();
  await engine.submit(record(threadId, turnId, endTurn(turnId)));
  // Everything after thread.created belongs to this turn (the thread has no other).
  return engine.readEvents(threadId, 1, 100_000).map(({ event }) => event);
}

/** The same stream at a provider's pace (a virtual clock, `msPerDelta` apart), through ingestion alone: how many part.delta events the log would get. */
function pacedDeltaEvents(deltas: number, size: number, msPerDelta: number): number {
  let now = 0;
  const ingestion = new StepIngestion({ turnId: 'paced', step: 1, now: () => now });
  let written = 0;
  const count = (events: DomainEvent[]) => (written += events.filter((event) => event.type === 'part.delta').length);
  ingestion.accept({ type: 'segment.started', segmentId: 's1', kind: 'text' });
  for (let n = 0; n < deltas; n++) {
    now += msPerDelta;
    ingestion.accept({ type: 'text.delta', segmentId: 's1', text: 'x'.repeat(size) });
    count(ingestion.take());
  }
  ingestion.accept({ type: 'segment.completed', segmentId: 's1', signature: null });
  count(ingestion.drain());
  return written;
}

async function durableEventsPerReply(smoke: boolean): Promise<Figure> {
  const deltas = smoke ? 100 : 2_500;
  const size = 4;
  const rounds = smoke ? 1 : 3;
  return inScratch('reply', (dir) =>
    withEngine(dir, {}, async (engine) => {
      const counts: number[] = [];
      let deltaEvents = 0;
      for (let round = 0; round < rounds; round++) {
        const events = await durableEventsOfReply(engine, `reply${round}`, deltas, size);
        const text = events.flatMap((event) => (event.type === 'part.delta' ? [event.text] : [])).join('');
        if (text.length !== deltas * size) throw new Error(`the log holds ${text.length} characters of the ${deltas * size} streamed`);
        counts.push(events.length);
        deltaEvents = events.filter((event) => event.type === 'part.delta').length;
      }
      const paced = pacedDeltaEvents(deltas, size, 10);
      return compared(
        {
          key: 'durableEventsPerReply',
          title: `durable events, ${(deltas * size).toLocaleString('en')}-char reply`,
          unit: 'events',
          value: median(counts),
          comparison: { label: 'T3 Code (a constant)', value: 3_024 },
          target: { on: 'value', op: '<=', bound: 20 },
          note: `${deltas.toLocaleString('en')} deltas of ${size} chars; comparison: T3 Code's 3,024 events for such a reply, a constant, not measured here; whole turn, of which ${deltaEvents} part.delta; deltas as fast as they come; at a provider's pace of 100 deltas/s (a ${deltas / 100} s reply, virtual clock) the 50 ms window gives ${paced} part.delta`,
        },
        smoke,
      );
    }),
  );
}

// ---------------------------------------------------------------- 5. reading a long thread

/**
 * A thread of exactly `total` events: turns of one text part streamed in
 * `deltasPerTurn` deltas of 200 characters (9 more events each), the last
 * turn shorter so the count comes out even.
 */
async function buildLongThread(engine: Engine, threadId: string, total: number, deltasPerTurn: number): Promise<void> {
  await engine.submit(createThread(threadId));
  const overhead = 9; // turn.requested, turn.started, step.started, response.started, part.started, part.completed, response.completed, step.finished, turn.completed
  for (let turn = 1; ; turn++) {
    const left = total - (await engine.getThread(threadId)).seq - (turn === 1 ? 1 : 0); // the first turn also starts the session
    if (left < overhead + 1) throw new Error(`cannot end a ${total}-event thread evenly`);
    const deltas = left - (overhead + deltasPerTurn) >= overhead + 1 ? deltasPerTurn : left - overhead;
    const turnId = `${threadId}-t${turn}`;
    const partId = `${turnId}-p1`;
    await engine.submit(startTurn(threadId, turnId));
    const text = Array.from({ length: deltas }, (_, n) => delta(turnId, partId, `${n} `.padEnd(200, 'lorem ipsum ')));
    await engine.submit(record(threadId, turnId, [...openStep(turnId, partId, turn === 1), ...text, ...closeTurn(turnId, partId)]));
    if (deltas !== deltasPerTurn) return;
  }
}

/** Starts the engine and its API on the in-process bus over `dir`, runs `use` with a client, and stops it all. */
async function withServer<T>(dir: string, use: (client: TurnloomClient) => Promise<T>): Promise<T> {
  const hub = new InProcessHub();
  const serverBus = hub.connect();
  const clientBus = hub.connect();
  const server = await startTurnloomServer({ bus: serverBus, store: LmdbStore.open(dir) });
  try {
    return await use(new TurnloomClient(clientBus));
  } finally {
    await server.stop();
    await Promise.all([clientBus.close(), serverBus.close()]);
  }
}

async function readingLongThread(smoke: boolean): Promise<Figure[]> {
  const total = smoke ? 300 : 10_000;
  const gap = smoke ? 99 : 999;
  const rounds = smoke ? 1 : 5;
  return inScratch('long', async (dir) => {
    const threadId = 'long';
    await withEngine(dir, {}, (engine) => buildLongThread(engine, threadId, total, 40));
    const getMs: number[] = [];
    const catchUpMs: number[] = [];
    let pages = 0;
    let turnsShown = 0;
    for (let round = 0; round < rounds; round++) {
      // A server just started: nothing of the thread is loaded, as for a client arriving later.
      await withServer(dir, async (client) => {
        let started = performance.now();
        const { thread } = await client.call('thread.get', { threadId });
        getMs.push(performance.now() - started);
        turnsShown = thread.turnIds.length;
        started = performance.now();
        let after = total - gap;
        for (pages = 0; after < total; pages++) {
          const { events } = await client.call('thread.events', { threadId, after });
          after = events.at(-1)!.threadSeq;
        }
        catchUpMs.push(performance.now() - started);
      });
    }
    return [
      absolute(
        {
          key: 'catchUpGap999',
          title: `catch-up of a ${gap}-event gap`,
          unit: 'ms',
          value: median(catchUpMs),
          target: null,
          note: `in-process bus, msgpack, ${pages} page${pages === 1 ? '' : 's'}; a ${total.toLocaleString('en')}-event thread, server just started; median of ${rounds} (${spread(catchUpMs, 2)})`,
        },
        smoke,
      ),
      absolute(
        {
          key: 'freshSnapshot10k',
          title: `fresh thread.get, ${total.toLocaleString('en')} events`,
          unit: 'ms',
          value: median(getMs),
          target: null,
          note: `first read after start (${turnsShown} newest turns in the answer, 200-char deltas, 40 per turn); median of ${rounds} (${spread(getMs, 2)})`,
        },
        smoke,
      ),
    ];
  });
}

// ---------------------------------------------------------------- 6. start after a crash

/**
 * A folder of `threads` threads left as a killed process leaves them: each
 * turn started and mid-answer (`open`), or the same turns completed. The
 * engine is closed without settling anything.
 */
async function buildFolder(dir: string, threads: number, open: boolean): Promise<void> {
  await withEngine(dir, {}, (engine) =>
    lanes(ids('crash', threads), 32, async (threadId) => {
      const turnId = `${threadId}-t1`;
      const partId = await openStreamingTurn(engine, threadId, turnId);
      const events = [delta(turnId, partId, 'Looking at the login code first. '.repeat(6))];
      await engine.submit(record(threadId, turnId, open ? events : [...events, ...closeTurn(turnId, partId)]));
    }),
  );
}

/** From opening the folder to the first `health` answer through a client, on a fresh copy of `source`; resolves with the ms and the turns repair settled. */
async function startOnce(source: string): Promise<{ ms: number; repaired: number }> {
  return inScratch('start', async (dir) => {
    cpSync(source, dir, { recursive: true });
    const hub = new InProcessHub();
    const serverBus = hub.connect();
    const clientBus = hub.connect();
    const started = performance.now();
    const server = await startTurnloomServer({ bus: serverBus, store: LmdbStore.open(dir) });
    try {
      await new TurnloomClient(clientBus).call('health', {});
      const ms = performance.now() - started;
      return { ms, repaired: await server.repaired };
    } finally {
      await server.stop();
      await Promise.all([clientBus.close(), serverBus.close()]);
    }
  });
}

async function crashStart(smoke: boolean): Promise<Figure> {
  const threads = smoke ? 5 : 200;
  const rounds = smoke ? 1 : 5;
  return inScratch('crashed', (crashed) =>
    inScratch('calm', async (calm) => {
      await buildFolder(crashed, threads, true);
      await buildFolder(calm, threads, false);
      const repaired: number[] = [];
      const { baseline, subject } = await interleaved(
        rounds,
        async () => (await startOnce(calm)).ms,
        async () => {
          const run = await startOnce(crashed);
          repaired.push(run.repaired);
          return run.ms;
        },
      );
      if (repaired.some((count) => count !== threads)) throw new Error(`crash repair settled ${repaired.join(', ')} turns, expected ${threads}`);
      return compared(
        {
          key: 'crashStart200',
          title: `first answer after crash, ${threads} open`,
          unit: 'ms',
          value: subject,
          comparison: { label: `same start, none open`, value: baseline },
          target: { on: 'ratio', op: '<=', bound: 1.2 },
          note: `${threads} threads either way; LmdbStore.open → startTurnloomServer (in-process bus, no providers) → first health answer through TurnloomClient; repair settled all ${threads} after it; median of ${rounds} interleaved rounds`,
        },
        smoke,
      );
    }),
  );
}

// ---------------------------------------------------------------- the suite

/** `npm run bench -- engine`: the engine's own costs, each beside what it is compared with, measured in the same run. */
export const engineSuite: Suite = {
  name: 'engine',
  async run({ smoke, onFigure }: { smoke: boolean; onFigure?: (figure: Figure) => void }) {
    const figures: Figure[] = [];
    const steps: Array<() => Promise<Figure | Figure[]>> = [
      () => engineCommand(smoke),
      () => commitLargeTurn(smoke),
      () => idleThreads(smoke),
      () => durableEventsPerReply(smoke),
      () => readingLongThread(smoke),
      () => crashStart(smoke),
    ];
    for (const step of steps) {
      for (const figure of [await step()].flat()) {
        onFigure?.(figure);
        figures.push(figure);
      }
    }
    return figures;
  },
};

// The idle-threads sample runs here when this file is started as its child (see `sampleInChild`).
if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url && process.argv[2] === '--idle-threads-child') {
  const sample = await sampleIdleThreads(process.argv[3]!, Number(process.argv[4]));
  process.stdout.write(`${JSON.stringify(sample)}\n`);
}
