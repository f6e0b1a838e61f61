import type { DomainEvent, StoredEvent } from '../services/engine/domainEvents.ts';
import type { ErrorBody } from '../services/errors.ts';
import type { PersistedActorTree } from '../services/engine/threadActors.ts';
import type { ThreadSummary, ThreadView, TurnView } from '../services/engine/threadView.ts';

/** The stored answer to a command id: the same id always gets this answer back. */
export type Receipt =
  | {
      commandId: string;
      fingerprint: string;
      threadId: string;
      /** When it was written, epoch milliseconds: receipts expire by age and count. */
      at: number;
      outcome: 'accepted';
      fromThreadSeq: number;
      toThreadSeq: number;
      diagnostics: number;
    }
  | { commandId: string; fingerprint: string; threadId: string; at: number; outcome: 'rejected'; error: ErrorBody };

/** A thread's summary and its place in the newest-first listing. */
export interface ListedThread {
  position: number;
  summary: ThreadSummary;
}

/** The thread row of the read model: the view without its turns, which are rows of their own. */
export type ThreadHead = Omit<ThreadView, 'turns'>;

export interface ActorSnapshotRecord {
  /** The per-thread sequence the tree reflects. */
  threadSeq: number;
  /** Hash of the machine definitions: a snapshot of other machines is discarded. */
  machinesVersion: string;
  actors: PersistedActorTree;
}

/** Everything one command writes, committed in one transaction or not at all. */
export interface CommitBatch {
  threadId: string;
  commandId: string;
  at: number;
  /** The thread's last sequence the batch was decided on; a different stored one aborts the commit. */
  expectedThreadSeq: number;
  events: Array<{ threadSeq: number; event: DomainEvent }>;
  head: ThreadHead;
  /** Turn rows the command changed. */
  turns: TurnView[];
  snapshot: ActorSnapshotRecord | null;
  receipt: Receipt;
}

export interface ThreadStore {
  /** The highest global sequence committed (0 for an empty log). */
  lastSeq(): number;
  readReceipt(commandId: string): Receipt | undefined;
  readView(threadId: string): ThreadView | undefined;
  readSnapshot(threadId: string): ActorSnapshotRecord | undefined;
  /** Events of a thread with `threadSeq > after`, oldest first, at most `limit`. */
  readThreadEvents(threadId: string, after: number, limit: number): StoredEvent[];
  /** The global log with `seq > after`, oldest first, at most `limit`. */
  readLog(after: number, limit: number): StoredEvent[];
  /**
   * Threads newest first (by when they were created), starting after
   * position `before` when given; with `owner`, only that owner's (`null`:
   * only those that belong to nobody). Lazy: a caller reads only what it needs.
   * `position` is stable for the life of the thread, so paging with it sees
   * every older thread exactly once while new ones are added.
   */
  threadsNewestFirst(before: number | null, owner?: string | null): Iterable<ListedThread>;
  readSummary(threadId: string): ThreadSummary | undefined;
  /** Threads that have an open turn: what crash repair looks at. */
  openTurns(): Array<{ threadId: string; turnId: string }>;
  /** Writes the batch atomically; resolves with the stored events once durable. */
  commit(batch: CommitBatch): Promise<StoredEvent[]>;
  /** Writes only a rejected receipt (nothing else changes). */
  commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void>;
  /**
   * Forgets receipts written before `olderThan`, and the oldest past
   * `keepAtMost`, at most `batchSize` of them per call; resolves with how many.
   */
  expireReceipts(olderThan: number, keepAtMost: number, batchSize: number): Promise<number>;
  close(): Promise<void>;
}
