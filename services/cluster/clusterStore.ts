import type { ThreadLogStream } from '../../adapters/jetstream/index.ts';
import {
  type ActorSnapshotRecord,
  type CommitBatch,
  type ListedThread,
  type Receipt,
  type ReplicaStore,
  type StoredEvent,
  type ThreadStore,
  type ThreadSummary,
  type ThreadView,
  type TurnView,
  TurnloomError,
} from '../../domain/index.ts';
import { SEQ_STRIDE, firstSeqOf, streamSeqOf } from './placement.ts';

/** What the store asks of the rest of the engine's cluster side. */
export interface ClusterStoreHooks {
  /** Whether this engine owns the shard and its copy of it is whole: only those threads are written, listed and looked after here. */
  serves(shard: number): boolean;
  /** Whether the engine may append now (its membership holds): an engine that was paused or cut off must not write on a stale belief. */
  mayAppend(): boolean;
  /** The log moved under this engine's copy of the thread (another engine wrote it): it is read again before the next write. */
  stale(threadId: string, why: string): void;
  /**
   * An append to the thread landed, or may yet land, after this engine
   * stopped serving its shard (it was paused or cut off while the append
   * was on its way): the shard's owner now must read the thread again.
   */
  wroteLate(threadId: string): void;
  /** The folder could not be written (a full disk, say): the engine must stop serving until it can. */
  storeFailed(error: unknown): void;
  /** An append to the shard is under way: its copy's position waits for it; the answer is told how it ended (see `ShardCopies.appending`). */
  appending(shard: number): (seq: number | null, inFolder: boolean) => void;
}

/**
 * The engine's store in a cluster: a thread's log is its subject in the
 * shared JetStream stream, and this engine's LMDB folder is its copy (and
 * read model) of the shards it owns. A command is appended first, as one
 * message (all its events and its receipt), fenced by the subject's last
 * sequence as this engine's copy has it, and only once the stream
 * acknowledged it is it written to the folder and answered. Lists, open
 * turns and reverts show only the shards this engine serves: its copy of
 * any other is a cache of the past.
 */
export class ClusterStore implements ThreadStore {
  /** The subject's last sequence as this engine last read or wrote it, for threads whose copy is known whole, by shard. */
  private readonly fences = new Map<number, Map<string, number>>();

  constructor(
    readonly local: ReplicaStore,
    private readonly log: ThreadLogStream,
    private readonly engineId: string,
    private readonly hooks: ClusterStoreHooks,
  ) {}

  shardOf(threadId: string): number {
    return this.log.shardOf(threadId);
  }

  /** The thread's copy was brought up to `lastSeq`, its subject's last message. */
  fence(threadId: string, lastSeq: number): void {
    const shard = this.shardOf(threadId);
    let fences = this.fences.get(shard);
    if (!fences) this.fences.set(shard, (fences = new Map()));
    fences.set(threadId, lastSeq);
  }

  private unfence(threadId: string): void {
    this.fences.get(this.shardOf(threadId))?.delete(threadId);
  }

  /** Forgets what is known of the threads of a shard this engine no longer owns; answers the threads it knew of. */
  unfenceShard(shard: number): string[] {
    const threads = [...(this.fences.get(shard)?.keys() ?? [])];
    this.fences.delete(shard);
    return threads;
  }

  /**
   * The sequence an append to the thread must name: as last read or written,
   * else its last event's message in the copy (a shard's copy is whole when
   * it is served; a rejection after that event, which has no event, costs one
   * refused append and a read of the thread).
   */
  private expectedLast(threadId: string): number {
    const known = this.fences.get(this.shardOf(threadId))?.get(threadId);
    if (known !== undefined) return known;
    const lastEvent = this.local.lastEventSeq(threadId);
    return lastEvent === 0 ? 0 : streamSeqOf(lastEvent);
  }

  async commit(batch: CommitBatch): Promise<StoredEvent[]> {
    if (batch.firstSeq !== undefined) return this.local.commit(batch);
    if (batch.events.length >= SEQ_STRIDE) {
      throw new TurnloomError('invalid_payload', `one command may write at most ${SEQ_STRIDE - 1} events in a cluster; this one wrote ${batch.events.length}`, { events: batch.events.length });
    }
    const { seq, ended } = await this.append(batch.threadId, batch.commandId, { kind: 'commit', by: this.engineId, commandId: batch.commandId, at: batch.at, events: batch.events, receipt: batch.receipt });
    try {
      const stored = await this.local.commit({ ...batch, firstSeq: firstSeqOf(seq) });
      ended(seq, true);
      return stored;
    } catch (error) {
      ended(seq, false);
      return this.lostLocally(batch.threadId, batch.commandId, error);
    }
  }

  async commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void> {
    const { seq, ended } = await this.append(receipt.threadId, receipt.commandId, { kind: 'rejection', by: this.engineId, receipt });
    try {
      await this.local.commitRejection(receipt);
      ended(seq, true);
    } catch (error) {
      ended(seq, false);
      await this.lostLocally(receipt.threadId, receipt.commandId, error);
    }
  }

  /**
   * The stream holds the command and this folder does not: the command is
   * durable (a retry finds its receipt wherever it lands), but this engine
   * cannot serve from a copy that lacks it, so it stops serving, and says so.
   */
  private lostLocally(threadId: string, commandId: string, error: unknown): never {
    this.unfence(threadId);
    this.hooks.stale(threadId, `its copy here could not take command ${commandId} in`);
    if (!(error instanceof TurnloomError)) this.hooks.storeFailed(error);
    throw TurnloomError.tryAgain(`command ${commandId} is in the cluster's log, but engine ${this.engineId} could not write its copy (${error instanceof Error ? error.message : String(error)}); try again: another engine answers it`, {
      threadId,
      commandId,
    });
  }

  /** Appends the record, fenced; resolves with its place and what to tell the shard's copy once the folder has it (or could not take it). */
  private async append(threadId: string, commandId: string, record: Parameters<ThreadLogStream['append']>[1]): Promise<{ seq: number; ended: (seq: number | null, inFolder: boolean) => void }> {
    const shard = this.shardOf(threadId);
    if (!this.hooks.serves(shard) || !this.hooks.mayAppend()) {
      throw TurnloomError.tryAgain(`engine ${this.engineId} does not own thread ${threadId} (any more); try again`, { threadId });
    }
    const expected = this.expectedLast(threadId);
    const ended = this.hooks.appending(shard);
    let appended: { seq: number; duplicate: boolean };
    try {
      appended = await this.log.append(threadId, record, expected, `${threadId}:${commandId}`);
    } catch (error) {
      ended(null, false);
      this.unfence(threadId);
      const fenced = error instanceof TurnloomError && error.code === 'fenced';
      if (!fenced) this.hooks.wroteLate(threadId);
      this.hooks.stale(threadId, fenced ? 'the log refused its append: the thread moved on elsewhere' : 'an append to the log has an unknown outcome');
      if (fenced) throw TurnloomError.tryAgain(`thread ${threadId} moved on in the log since this engine read it; try again`, { threadId });
      throw error;
    }
    if (appended.duplicate) {
      // The stream has this command already, from an attempt whose answer was lost: read again, the thread takes it in, and a retry finds its receipt.
      ended(null, false);
      this.unfence(threadId);
      this.hooks.stale(threadId, `command ${commandId} was in the log already`);
      throw TurnloomError.tryAgain(`command ${commandId} was written before; try again`, { threadId, commandId });
    }
    if (!this.hooks.serves(shard) || !this.hooks.mayAppend()) {
      // Landed after this engine stopped serving the shard: the owner now is told (its copy lacks it), and this one answers as if it had not.
      ended(null, false);
      this.hooks.wroteLate(threadId);
      throw TurnloomError.tryAgain(`engine ${this.engineId} lost thread ${threadId} while writing it; try again: the command is in the log, and its next owner answers it`, { threadId, commandId });
    }
    this.fence(threadId, appended.seq);
    return { seq: appended.seq, ended };
  }

  lastSeq(): number {
    return this.local.lastSeq();
  }

  readReceipt(commandId: string): Receipt | undefined {
    return this.local.readReceipt(commandId);
  }

  readView(threadId: string): ThreadView | undefined {
    return this.local.readView(threadId);
  }

  readTurn(threadId: string, turnId: string): TurnView | undefined {
    return this.local.readTurn(threadId, turnId);
  }

  readSnapshot(threadId: string): ActorSnapshotRecord | undefined {
    return this.local.readSnapshot(threadId);
  }

  readThreadEvents(threadId: string, after: number, limit: number): StoredEvent[] {
    return this.local.readThreadEvents(threadId, after, limit);
  }

  readLog(after: number, limit: number): StoredEvent[] {
    return this.local.readLog(after, limit);
  }

  private served = ({ threadId }: { threadId: string }): boolean => this.hooks.serves(this.shardOf(threadId));

  *threadsNewestFirst(before: number | null, owner?: string | null): Iterable<ListedThread> {
    for (const listed of this.local.threadsNewestFirst(before, owner)) if (this.hooks.serves(this.shardOf(listed.summary.id))) yield listed;
  }

  readSummary(threadId: string): ThreadSummary | undefined {
    return this.local.readSummary(threadId);
  }

  openTurns(): Array<{ threadId: string; turnId: string }> {
    return this.local.openTurns().filter(this.served);
  }

  openReverts(): Array<{ threadId: string; revertId: string }> {
    return this.local.openReverts().filter(this.served);
  }

  expireReceipts(olderThan: number, batchSize: number): Promise<number> {
    return this.local.expireReceipts(olderThan, batchSize);
  }

  capReceipts(maxPerThread: number): void {
    this.local.capReceipts(maxPerThread);
  }

  receiptTotal(): number {
    return this.local.receiptTotal();
  }

  close(): Promise<void> {
    return this.local.close();
  }
}
