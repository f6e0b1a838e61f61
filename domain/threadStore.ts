import type { DomainEvent, StoredEvent } from './domainEvents.ts';
import type { ErrorBody } from './errors.ts';
import type { Snapshot } from 'xstate';
import type { ThreadSummary, ThreadView, TurnView } from './threadView.ts';

/** One event of a worker's record the machines refused: by its place in the batch, with the machine's reason. */
export interface Refusal {
  index: number;
  event: string;
  machine: string;
  state: string;
}

/** The four lifecycles that run as actors. */
export type LifecycleMachineName = 'session' | 'turn' | 'part' | 'approval';

/** One live actor of the tree as it is persisted: enough to restore it exactly. */
export interface PersistedActor {
  machine: LifecycleMachineName;
  id: string;
  input: Record<string, unknown>;
  snapshot: Snapshot<unknown>;
}

/** The thread's actor tree as stored in LMDB: only actors not yet in a final state. */
export type PersistedActorTree = PersistedActor[];

/**
 * The stored answer to a command id: the same id always gets this answer
 * back. A worker's writes under one lease share one receipt, the last
 * write's (`writeSeq`), under the lease's id: its outbox sends one write at
 * a time, in order, so only the last one can ever be sent again.
 */
export type Receipt =
  | {
      commandId: string;
      fingerprint: string;
      threadId: string;
      /** When it was written, epoch milliseconds: receipts expire by age, and a thread keeps only its newest. */
      at: number;
      outcome: 'accepted';
      fromThreadSeq: number;
      toThreadSeq: number;
      refused: Refusal[];
      /** For a lease's receipt: the number of the write it answers. */
      writeSeq?: number;
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
  /**
   * Turns the command changed, each with what the store holds of it (`null`
   * for a new turn), so the store can write only what changed. A turn's
   * texts only grow at their end between the two.
   */
  turns: Array<{ previous: TurnView | null; turn: TurnView }>;
  snapshot: ActorSnapshotRecord | null;
  receipt: Receipt;
  /**
   * The global sequence of the first event when the batch is already in a
   * log kept elsewhere (a cluster's stream, which numbers it): the store
   * only keeps its copy. Left out, the store takes the next sequences of its own.
   */
  firstSeq?: number;
}

/** What a store that copies a log kept elsewhere copies, and how far it has taken it in. */
export interface ReplicaMark {
  /** The engine this folder belongs to: kept across restarts, so its threads are recognised as its own. */
  engineId: string;
  /** Which log it copies (a stream's name and when it was made): a copy of another one is refused. */
  source: string;
  /**
   * How far the folder copies each shard: every message of shard `s` up to
   * stream sequence `positions[s]` is in it (a shard never copied is absent).
   */
  positions: Readonly<Record<number, number>>;
}

export interface ThreadStore {
  /** The highest global sequence committed (0 for an empty log). */
  lastSeq(): number;
  readReceipt(commandId: string): Receipt | undefined;
  readView(threadId: string): ThreadView | undefined;
  /** One turn row, without reading the rest of the thread. */
  readTurn(threadId: string, turnId: string): TurnView | undefined;
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
  /** Threads with a revert under way: after a crash, crash repair ends them. */
  openReverts(): Array<{ threadId: string; revertId: string }>;
  /** Writes the batch atomically; resolves with the stored events once durable. */
  commit(batch: CommitBatch): Promise<StoredEvent[]>;
  /** Writes only a rejected receipt (nothing else changes). */
  commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void>;
  /** Forgets receipts written before `olderThan`, oldest first, at most `batchSize` of them per call; resolves with how many. */
  expireReceipts(olderThan: number, batchSize: number): Promise<number>;
  /**
   * From now on each thread keeps at most `maxPerThread` receipts: a write
   * past it forgets that thread's oldest in its own transaction, and no
   * other thread's. A thread already past it (a lower bound than before) is
   * brought within it by its next write.
   */
  capReceipts(maxPerThread: number): void;
  /** How many receipts are kept. */
  receiptTotal(): number;
  close(): Promise<void>;
}

/** A store that is one engine's copy of a log kept elsewhere (a cluster's stream) as well as its read model. */
export interface ReplicaStore extends ThreadStore {
  /** The global sequence of the thread's last event here; 0 when it has none. */
  lastEventSeq(threadId: string): number;
  readReplica(): ReplicaMark | undefined;
  /** Records the mark; a shard's position lower than the one recorded is ignored. */
  writeReplica(mark: ReplicaMark): Promise<void>;
  /** Writes a little, to learn whether the folder takes writes again (after a full disk, say); throws when it does not. */
  checkWritable(): Promise<void>;
  /** The global sequence of the thread's first event (its place in the newest-first listing); 0 when it has none. */
  firstEventSeq(threadId: string): number;
}
