import type { LogMessage, ThreadLogStream } from '../../adapters/jetstream/index.ts';
import { type Logger, type ReplicaMark, type ReplicaStore, errorFields } from '../../domain/index.ts';
import type { Engine } from '../engine/engine.ts';
import { firstSeqOf, streamSeqOf } from './placement.ts';

/** Messages of a catch-up taken in at once at most: past it the read waits for the store. */
const MAX_IN_FLIGHT = 512;

/** How often the positions reached are written down (a restart reads again from there; taking a message in twice is harmless). */
const MARK_EVERY_MS = 1_000;

/** What this engine writes itself into a shard it owns: appended and not yet in the folder, and the last one that is. */
interface OwnWrites {
  inFlight: number;
  highest: number;
  /** A write of the shard failed to reach the folder: its position stays until the shard is read again. */
  broken: boolean;
}

/**
 * This engine's folder as a copy of the shards it owns, and of no others:
 * a shard taken is brought up to the log's end (from where the folder's copy
 * of it ends, through one consumer that goes when the read ends), a thread
 * found stale is brought up on its own, and each message is taken in by the
 * engine (`Engine.ingest`: same machines, same read model, same receipts).
 * While it owns a shard the engine is its only writer, so nothing is
 * followed: its own commits keep the copy whole, and how far that reaches
 * is written down for the next time the shard is read.
 */
export class ShardCopies {
  private readonly positions = new Map<number, number>();
  private readonly own = new Map<number, OwnWrites>();
  private marked = new Map<number, number>();
  private marker: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: ThreadLogStream,
    private readonly engine: Engine,
    private readonly local: ReplicaStore,
    private readonly mark: Omit<ReplicaMark, 'positions'>,
    private readonly logger: Logger,
    /** The folder could not be written: the engine must stop serving until it can. */
    private readonly storeFailed: (error: unknown) => void,
  ) {
    for (const [shard, position] of Object.entries(local.readReplica()?.positions ?? {})) this.positions.set(Number(shard), position);
    this.marked = new Map(this.positions);
  }

  start(): void {
    this.marker = setInterval(() => void this.writeMark(), MARK_EVERY_MS);
  }

  /** How far the folder copies the shard. */
  positionOf(shard: number): number {
    return this.positions.get(shard) ?? 0;
  }

  /**
   * Brings the shard's copy up to the log's end as it is now, and resolves
   * with the last message of each thread read on the way (what a fence must
   * name). Only for a shard this engine just took: nobody else writes it.
   */
  async catchUpShard(shard: number): Promise<Map<string, number>> {
    const from = this.positionOf(shard);
    const last = await this.log.lastOfShard(shard);
    const lastOfThread = new Map<string, number>();
    if (last > from) await this.takeInAll(this.log.readShard(shard, from, last), lastOfThread);
    this.advance(shard, last);
    this.own.set(shard, { inFlight: 0, highest: last, broken: false });
    return lastOfThread;
  }

  /**
   * Brings one thread's copy up to its subject's last message now;
   * resolves with that message's sequence (0: the thread has none), which is
   * what a fence must name.
   */
  async catchUpThread(threadId: string): Promise<number> {
    const last = await this.log.last(threadId);
    const copied = streamSeqOf(this.local.lastEventSeq(threadId));
    if (last > copied) await this.takeInAll(this.log.read(threadId, Math.max(0, copied), last), new Map());
    return last;
  }

  /** Messages in stream order; a thread's are taken in in order (the engine's per-thread queue), different threads' side by side. */
  private async takeInAll(messages: AsyncIterable<LogMessage>, lastOfThread: Map<string, number>): Promise<void> {
    const pending = new Set<Promise<void>>();
    let failure: unknown;
    for await (const message of messages) {
      lastOfThread.set(message.threadId, message.seq);
      const taken: Promise<void> = this.takeIn(message)
        .catch((error: unknown) => {
          failure ??= error;
        })
        .finally(() => pending.delete(taken));
      pending.add(taken);
      if (pending.size >= MAX_IN_FLIGHT) await Promise.race(pending);
      if (failure !== undefined) break;
    }
    await Promise.all(pending);
    if (failure !== undefined) throw failure;
  }

  private async takeIn(message: LogMessage): Promise<void> {
    const { record, threadId } = message;
    if (record.kind === 'commit') {
      await this.engine.ingest(threadId, { commandId: record.commandId, at: record.at, events: record.events, receipt: record.receipt, firstSeq: firstSeqOf(message.seq) });
    } else {
      await this.local.commitRejection(record.receipt);
    }
  }

  /**
   * An append of this engine's to a shard it owns is under way: the shard's
   * position waits for it. The answer says how it ended: in the folder at
   * `seq`; or not (`seq` null: refused, a duplicate, or an unknown outcome;
   * `inFolder` false: the folder failed), and then a message of the shard
   * may be missing here, so the position stays until the shard is read again.
   * It counts only for this time of owning the shard: one that ends after the
   * shard was lost (and perhaps taken again) changes nothing.
   */
  appending(shard: number): (seq: number | null, inFolder: boolean) => void {
    const writes = this.own.get(shard);
    if (!writes) return () => undefined;
    writes.inFlight += 1;
    return (seq, inFolder) => {
      if (this.own.get(shard) !== writes) return;
      writes.inFlight -= 1;
      if (seq === null || !inFolder) writes.broken = true;
      else writes.highest = Math.max(writes.highest, seq);
      // With nothing under way, everything up to the highest of its own writes is in: no other engine writes the shard.
      if (writes.inFlight === 0 && !writes.broken) this.advance(shard, writes.highest);
    };
  }

  /** Another engine wrote the shard while this one owned it (it was paused or cut off, and not yet told): the position stays until the shard is read again. */
  foreign(shard: number): void {
    const writes = this.own.get(shard);
    if (writes) writes.broken = true;
  }

  /** Whether an append of this engine's to the shard is under way. */
  busy(shard: number): boolean {
    return (this.own.get(shard)?.inFlight ?? 0) > 0;
  }

  /** The shard is no longer this engine's: its position stays where it is, for the next time. */
  forget(shard: number): void {
    this.own.delete(shard);
  }

  private advance(shard: number, position: number): void {
    if (position > this.positionOf(shard)) this.positions.set(shard, position);
  }

  private async writeMark(): Promise<void> {
    const moved: Record<number, number> = {};
    for (const [shard, position] of this.positions) if (position > (this.marked.get(shard) ?? 0)) moved[shard] = position;
    if (Object.keys(moved).length === 0) return;
    try {
      await this.local.writeReplica({ ...this.mark, positions: moved });
      for (const [shard, position] of Object.entries(moved)) this.marked.set(Number(shard), position);
    } catch (error) {
      this.logger.error(errorFields(error), 'could not write down how far the shards are copied');
      this.storeFailed(error);
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.marker);
    await this.writeMark();
  }
}
