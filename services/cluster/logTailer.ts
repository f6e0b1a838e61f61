import { setTimeout as sleep } from 'node:timers/promises';
import type { LogFollower, LogMessage, ThreadLogStream } from '../../adapters/jetstream/index.ts';
import type { Logger, ReplicaMark, ReplicaStore } from '../../domain/index.ts';
import type { Engine } from '../engine/engine.ts';
import { firstSeqOf, streamSeqOf } from './placement.ts';

/** Copies taken in but not yet answered for, at most: past it the tailer waits for the store. */
const MAX_IN_FLIGHT = 1_024;

/** How often the position reached is written down (a restart reads again from there; taking a message in twice is harmless). */
const MARK_EVERY_MS = 250;

/** The waits before following the stream again after a failure, growing while it keeps failing where it failed before. */
const REFOLLOW_MS = [250, 500, 1_000, 2_000] as const;

/**
 * Keeps this engine's folder a copy of every thread's log: it follows the
 * shared stream from where the folder's copy ends, in stream order, and has
 * the engine take each command in (`Engine.ingest`: same machines, same read
 * model, same receipts). A thread's messages are taken in in order (the
 * engine's per-thread queue); different threads' in parallel, so their
 * writes share the store's group commits.
 */
export class LogTailer {
  private follower: LogFollower | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Everything up to here is in the folder. */
  private reached: number;
  private readonly pending = new Set<number>();
  /** The last message read from the stream. */
  private read: number;
  /** The first message that could not be taken in: the position stops below it until the tailer follows again from there. */
  private failedAt = Number.POSITIVE_INFINITY;
  private marker: NodeJS.Timeout | undefined;
  private marked: number;
  private readonly waiters: Array<{ position: number; resolve: () => void }> = [];

  constructor(
    private readonly log: ThreadLogStream,
    private readonly engine: Engine,
    private readonly local: ReplicaStore,
    private readonly mark: Omit<ReplicaMark, 'position'>,
    /** A message on a thread this engine believes it owns, written by another: it has been taken. */
    private readonly foreign: (message: LogMessage) => void,
    private readonly logger: Logger,
  ) {
    this.reached = local.readReplica()?.position ?? 0;
    this.marked = this.reached;
    this.read = this.reached;
  }

  get position(): number {
    return this.reached;
  }

  /** Starts following; resolves once the folder holds everything the stream held when it was called. */
  async start(): Promise<void> {
    const { lastSeq } = await this.log.info();
    this.running = this.follow();
    this.marker = setInterval(() => void this.writeMark(), MARK_EVERY_MS);
    await this.reach(lastSeq);
  }

  /** Resolves once everything up to `position` is in the folder. */
  reach(position: number): Promise<void> {
    if (this.reached >= position) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  /** Whether everything up to `position` is in the folder within `ms`; a wait that gives up leaves no waiter behind. */
  reachWithin(position: number, ms: number): Promise<boolean> {
    if (this.reached >= position) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { position, resolve: () => (clearTimeout(timer), resolve(true)) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        resolve(false);
      }, ms);
      this.waiters.push(waiter);
    });
  }

  /**
   * Brings one thread's copy up to the subject's last message now, ahead of
   * the tailer if it lags; resolves with that message's sequence (0: the
   * thread has none), which is what a fence must name.
   */
  async catchUpThread(threadId: string): Promise<number> {
    const last = await this.log.last(threadId);
    const copied = streamSeqOf(this.local.lastEventSeq(threadId));
    for await (const message of this.log.read(threadId, Math.max(0, copied), last)) await this.takeIn(message);
    return last;
  }

  private async follow(): Promise<void> {
    // Each follow is a consumer of the stream: a message that keeps failing must not make a new one every 250 ms.
    let failures = 0;
    while (!this.stopped) {
      const from = this.reached;
      try {
        this.read = this.reached;
        this.failedAt = Number.POSITIVE_INFINITY;
        this.follower = await this.log.follow(this.reached);
        if (this.stopped) this.follower.stop();
        for await (const message of this.follower) {
          if (message.seq <= this.read) continue;
          this.read = message.seq;
          this.pending.add(message.seq);
          const taken = this.takeIn(message)
            .then(() => this.settle(message.seq))
            .catch((error: unknown) => {
              // Never skipped: the tailer starts over from what is in the folder.
              this.failedAt = Math.min(this.failedAt, message.seq);
              this.settle(message.seq);
              this.logger.error({ seq: message.seq, threadId: message.threadId, error: error instanceof Error ? error.message : String(error) }, 'could not take a log message in; following again from the last one taken in');
              this.follower?.stop();
            });
          if (this.pending.size >= MAX_IN_FLIGHT) await taken;
        }
      } catch (error) {
        if (!this.stopped) this.logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'lost the log stream; following it again');
      }
      // What is still being taken in finishes before following again, from the first message not taken in.
      while (this.pending.size > 0) await sleep(10);
      failures = this.reached > from ? 0 : failures + 1;
      if (!this.stopped) await sleep(REFOLLOW_MS[Math.min(failures, REFOLLOW_MS.length - 1)]);
    }
  }

  private settle(seq: number): void {
    this.pending.delete(seq);
    // Messages come in stream order: everything below the oldest one still being taken in is in.
    const oldest = this.pending.values().next();
    const reached = Math.min(oldest.done ? this.read : oldest.value - 1, this.failedAt - 1);
    if (reached > this.reached) this.reached = reached;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i]!;
      if (waiter.position <= this.reached) {
        this.waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  private async takeIn(message: LogMessage): Promise<void> {
    const { record, threadId } = message;
    switch (record.kind) {
      case 'commit': {
        const taken = await this.engine.ingest(threadId, { commandId: record.commandId, at: record.at, events: record.events, receipt: record.receipt, firstSeq: firstSeqOf(message.seq) });
        if (taken) this.foreign(message);
        return;
      }
      case 'rejection':
        await this.local.commitRejection(record.receipt);
        return;
      case 'owner':
        if (record.by !== this.mark.engineId) this.foreign(message);
        return;
    }
  }

  private async writeMark(): Promise<void> {
    if (this.reached <= this.marked) return;
    const position = this.reached;
    try {
      await this.local.writeReplica({ ...this.mark, position });
      this.marked = position;
    } catch (error) {
      this.logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'could not write down how far the log is copied');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.marker);
    this.follower?.stop();
    await this.running;
    await this.writeMark();
  }
}
