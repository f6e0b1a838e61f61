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
import { SEQ_STRIDE, firstSeqOf } from './placement.ts';

/**
 * The engine's store in a cluster: a thread's log is its subject in the
 * shared JetStream stream, and this engine's LMDB folder is its copy and
 * read model. A command is appended first, as one message (all its events
 * and its receipt), fenced by the subject's last sequence this engine knows
 * (its own mark when it took the thread, or its own last append), and only
 * once the stream acknowledged it is it written to the folder and answered.
 * A thread this engine does not own has no fence here and cannot be written;
 * a batch already in the stream (`firstSeq`, from another engine) is only
 * copied.
 */
export class ClusterStore implements ThreadStore {
  /** For each thread this engine owns: the subject's last sequence, which the next append must name. */
  private readonly fences = new Map<string, number>();

  constructor(
    readonly local: ReplicaStore,
    private readonly log: ThreadLogStream,
    private readonly engineId: string,
    /** The stream refused this engine's append, or its outcome is unknown: this engine must take the thread again before writing it. */
    private readonly lose: (threadId: string, why: string) => void,
  ) {}

  /** Arms the fence of a thread this engine just took: its own mark is the subject's last message. */
  fence(threadId: string, lastSeq: number): void {
    this.fences.set(threadId, lastSeq);
  }

  /** The subject's last sequence as this engine, owning the thread, last wrote or marked it; `undefined` when it does not own it. */
  fenceOf(threadId: string): number | undefined {
    return this.fences.get(threadId);
  }

  unfence(threadId: string): void {
    this.fences.delete(threadId);
  }

  async commit(batch: CommitBatch): Promise<StoredEvent[]> {
    if (batch.firstSeq !== undefined) return this.local.commit(batch);
    if (batch.events.length >= SEQ_STRIDE) {
      throw new TurnloomError('invalid_payload', `one command may write at most ${SEQ_STRIDE - 1} events in a cluster; this one wrote ${batch.events.length}`, { events: batch.events.length });
    }
    const seq = await this.append(batch.threadId, batch.commandId, { kind: 'commit', by: this.engineId, commandId: batch.commandId, at: batch.at, events: batch.events, receipt: batch.receipt });
    try {
      return await this.local.commit({ ...batch, firstSeq: firstSeqOf(seq) });
    } catch (error) {
      // The stream holds it and this copy does not: taken again, the thread is caught up from the stream first.
      this.lose(batch.threadId, `its copy here could not take command ${batch.commandId} in`);
      throw error;
    }
  }

  async commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void> {
    await this.append(receipt.threadId, receipt.commandId, { kind: 'rejection', by: this.engineId, receipt });
    await this.local.commitRejection(receipt);
  }

  private async append(threadId: string, commandId: string, record: Parameters<ThreadLogStream['append']>[1]): Promise<number> {
    const expected = this.fences.get(threadId);
    if (expected === undefined) throw new TurnloomError('unavailable', `engine ${this.engineId} does not own thread ${threadId} (any more); try again`, { threadId });
    let appended: { seq: number; duplicate: boolean };
    try {
      appended = await this.log.append(threadId, record, expected, `${threadId}:${commandId}`);
    } catch (error) {
      const fenced = error instanceof TurnloomError && error.code === 'fenced';
      this.lose(threadId, fenced ? 'the log refused its append: another engine appended to the thread' : 'an append to the log has an unknown outcome');
      if (fenced) throw new TurnloomError('unavailable', `another engine took thread ${threadId}; try again`, { threadId });
      throw error;
    }
    if (appended.duplicate) {
      // The stream has this command already, from an attempt whose answer was lost: taken again, the thread takes it in, and a retry finds its receipt.
      this.lose(threadId, `command ${commandId} was in the log already`);
      throw new TurnloomError('unavailable', `command ${commandId} was written before; try again`, { threadId, commandId });
    }
    if (this.fences.has(threadId)) this.fences.set(threadId, appended.seq);
    return appended.seq;
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

  threadsNewestFirst(before: number | null, owner?: string | null): Iterable<ListedThread> {
    return this.local.threadsNewestFirst(before, owner);
  }

  readSummary(threadId: string): ThreadSummary | undefined {
    return this.local.readSummary(threadId);
  }

  openTurns(): Array<{ threadId: string; turnId: string }> {
    return this.local.openTurns();
  }

  openReverts(): Array<{ threadId: string; revertId: string }> {
    return this.local.openReverts();
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
