import { type Database, type RootDatabase, open } from 'lmdb';
import type { StoredEvent } from '../services/engine/domainEvents.ts';
import { TurnloomError } from '../services/errors.ts';
import { summarize, type ThreadSummary, type ThreadView, type TurnView } from '../services/engine/threadView.ts';
import type { ActorSnapshotRecord, CommitBatch, Receipt, ThreadHead, ThreadStore } from './threadStore.ts';

/**
 * The keyspace, one LMDB environment with a database per concern
 * (all values msgpack):
 *
 * | database    | key                     | value                          |
 * |-------------|-------------------------|--------------------------------|
 * | `log`       | seq                     | StoredEvent (the append-only log) |
 * | `threadLog` | [threadId, threadSeq]   | seq (each thread's index)      |
 * | `receipts`  | commandId               | Receipt                        |
 * | `snapshots` | threadId                | ActorSnapshotRecord            |
 * | `threads`   | threadId                | ThreadHead (read model row)    |
 * | `turns`     | [threadId, turnId]      | TurnView (read model row)      |
 * | `summaries` | threadId                | ThreadSummary (for listing)    |
 * | `openTurns` | threadId                | turnId (what repair looks at)  |
 */
export class LmdbStore implements ThreadStore {
  private readonly env: RootDatabase;
  private readonly log: Database<StoredEvent, number>;
  private readonly threadLog: Database<number, [string, number]>;
  private readonly receipts: Database<Receipt, string>;
  private readonly snapshots: Database<ActorSnapshotRecord, string>;
  private readonly threads: Database<ThreadHead, string>;
  private readonly turns: Database<TurnView, [string, string]>;
  private readonly summaries: Database<ThreadSummary, string>;
  private readonly openTurnIndex: Database<string, string>;

  private constructor(path: string) {
    this.env = open({ path, maxDbs: 16 });
    this.log = this.env.openDB({ name: 'log' });
    this.threadLog = this.env.openDB({ name: 'threadLog' });
    this.receipts = this.env.openDB({ name: 'receipts' });
    this.snapshots = this.env.openDB({ name: 'snapshots' });
    this.threads = this.env.openDB({ name: 'threads' });
    this.turns = this.env.openDB({ name: 'turns' });
    this.summaries = this.env.openDB({ name: 'summaries' });
    this.openTurnIndex = this.env.openDB({ name: 'openTurns' });
  }

  /** Opens (creating if needed) the store in a directory. */
  static open(path: string): LmdbStore {
    return new LmdbStore(path);
  }

  lastSeq(): number {
    for (const key of this.log.getKeys({ reverse: true, limit: 1 })) return key;
    return 0;
  }

  readReceipt(commandId: string): Receipt | undefined {
    return this.receipts.get(commandId);
  }

  readView(threadId: string): ThreadView | undefined {
    const head = this.threads.get(threadId);
    if (!head) return undefined;
    const turns: Record<string, TurnView> = {};
    for (const { key, value } of this.turns.getRange({ start: [threadId], end: [threadId, '\uffff'] })) turns[key[1]] = value;
    return { ...head, turns };
  }

  readSnapshot(threadId: string): ActorSnapshotRecord | undefined {
    return this.snapshots.get(threadId);
  }

  readThreadEvents(threadId: string, after: number, limit: number): StoredEvent[] {
    const seqs = [...this.threadLog.getRange({ start: [threadId, after + 1], end: [threadId, Number.MAX_SAFE_INTEGER], limit }).map(({ value }) => value)];
    return seqs.map((seq) => this.log.get(seq)!);
  }

  readLog(after: number, limit: number): StoredEvent[] {
    return [...this.log.getRange({ start: after + 1, limit }).map(({ value }) => value)];
  }

  listThreads(): ThreadSummary[] {
    return [...this.summaries.getRange({}).map(({ value }) => value)];
  }

  openTurns(): Array<{ threadId: string; turnId: string }> {
    return [...this.openTurnIndex.getRange({}).map(({ key, value }) => ({ threadId: key, turnId: value }))];
  }

  async commit(batch: CommitBatch): Promise<StoredEvent[]> {
    const stored = await this.env.childTransaction(() => {
      const head = this.threads.get(batch.threadId);
      const currentSeq = head?.seq ?? 0;
      if (currentSeq !== batch.expectedThreadSeq) {
        throw new TurnloomError('conflict', `thread ${batch.threadId} moved on (at ${currentSeq}, expected ${batch.expectedThreadSeq})`);
      }
      if (this.receipts.get(batch.commandId)) throw new TurnloomError('conflict', `command ${batch.commandId} already has a receipt`);
      let seq = this.lastSeq();
      const events: StoredEvent[] = batch.events.map(({ threadSeq, event }) => {
        seq += 1;
        const storedEvent: StoredEvent = { seq, threadId: batch.threadId, threadSeq, commandId: batch.commandId, at: batch.at, event };
        this.log.put(seq, storedEvent);
        this.threadLog.put([batch.threadId, threadSeq], seq);
        return storedEvent;
      });
      this.threads.put(batch.threadId, batch.head);
      for (const turn of batch.turns) this.turns.put([batch.threadId, turn.id], turn);
      this.summaries.put(batch.threadId, summarize({ ...batch.head, turns: {} }));
      if (batch.head.openTurnId) this.openTurnIndex.put(batch.threadId, batch.head.openTurnId);
      else this.openTurnIndex.remove(batch.threadId);
      if (batch.snapshot) this.snapshots.put(batch.threadId, batch.snapshot);
      this.receipts.put(batch.commandId, batch.receipt);
      return events;
    });
    await this.env.flushed;
    return stored;
  }

  async commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void> {
    await this.env.childTransaction(() => {
      if (!this.receipts.get(receipt.commandId)) this.receipts.put(receipt.commandId, receipt);
    });
    await this.env.flushed;
  }

  async close(): Promise<void> {
    await this.env.close();
  }
}
