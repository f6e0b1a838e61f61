import Database from 'better-sqlite3';
import { pack, unpack } from 'msgpackr';
import { type ActorSnapshotRecord, type CommitBatch, type ListedThread, type Receipt, type StoredEvent, type ThreadHead, type ThreadStore, type ThreadSummary, type ThreadView, type TurnView, TurnloomError, summarize } from '../domain/index.ts';

const decode = <T>(row: Record<string, unknown> | undefined): T | undefined => (row ? (unpack(row.data as Buffer) as T) : undefined);

/**
 * The same keyspace as the LMDB store, on SQLite in WAL mode with
 * synchronous=FULL (what T3 Code and opencode use), values msgpack as there:
 * only the storage engine differs.
 */
export class SqliteStore implements ThreadStore {
  private readonly db: Database;
  private readonly write: (batch: CommitBatch) => StoredEvent[];
  private maxReceiptsPerThread = Number.POSITIVE_INFINITY;

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(`
      create table if not exists log (seq integer primary key, thread_id text, thread_seq integer, data blob);
      create unique index if not exists log_thread on log (thread_id, thread_seq);
      create table if not exists receipts (command_id text primary key, thread_id text, at integer, data blob);
      create index if not exists receipts_at on receipts (at);
      create index if not exists receipts_thread on receipts (thread_id, at);
      create table if not exists snapshots (thread_id text primary key, data blob);
      create table if not exists threads (thread_id text primary key, data blob);
      create table if not exists turns (thread_id text, turn_id text, data blob, primary key (thread_id, turn_id));
      create table if not exists summaries (thread_id text primary key, data blob);
      create table if not exists open_turns (thread_id text primary key, turn_id text);
      create table if not exists open_reverts (thread_id text primary key, revert_id text);
    `);
    const head = this.db.prepare('select data from threads where thread_id = ?');
    const receipt = this.db.prepare('select data from receipts where command_id = ?');
    const last = this.db.prepare('select max(seq) as seq from log');
    const putEvent = this.db.prepare('insert into log (seq, thread_id, thread_seq, data) values (?, ?, ?, ?)');
    const putThread = this.db.prepare('insert or replace into threads (thread_id, data) values (?, ?)');
    const putTurn = this.db.prepare('insert or replace into turns (thread_id, turn_id, data) values (?, ?, ?)');
    const putSummary = this.db.prepare('insert or replace into summaries (thread_id, data) values (?, ?)');
    const putOpenTurn = this.db.prepare('insert or replace into open_turns (thread_id, turn_id) values (?, ?)');
    const dropOpenTurn = this.db.prepare('delete from open_turns where thread_id = ?');
    const putOpenRevert = this.db.prepare('insert or replace into open_reverts (thread_id, revert_id) values (?, ?)');
    const dropOpenRevert = this.db.prepare('delete from open_reverts where thread_id = ?');
    const putSnapshot = this.db.prepare('insert or replace into snapshots (thread_id, data) values (?, ?)');
    const putReceipt = this.db.prepare('insert or replace into receipts (command_id, thread_id, at, data) values (?, ?, ?, ?)');
    const trimReceipts = this.db.prepare('delete from receipts where rowid in (select rowid from receipts where thread_id = ? order by at limit max(0, (select count(*) from receipts where thread_id = ?) - ?))');
    this.write = this.db.transaction((batch: CommitBatch) => {
      const current = decode<ThreadHead>(head.get(batch.threadId))?.seq ?? 0;
      if (current !== batch.expectedThreadSeq) throw new TurnloomError('conflict', `thread ${batch.threadId} moved on`);
      if (receipt.get(batch.commandId)) throw new TurnloomError('conflict', `command ${batch.commandId} already has a receipt`);
      let seq = Number(last.get()?.seq ?? 0);
      const events = batch.events.map(({ threadSeq, event }): StoredEvent => {
        seq += 1;
        const stored: StoredEvent = { seq, threadId: batch.threadId, threadSeq, commandId: batch.commandId, at: batch.at, event };
        putEvent.run(seq, batch.threadId, threadSeq, pack(stored));
        return stored;
      });
      putThread.run(batch.threadId, pack(batch.head));
      for (const { turn } of batch.turns) putTurn.run(batch.threadId, turn.id, pack(turn));
      putSummary.run(batch.threadId, pack(summarize({ ...batch.head, turns: {} })));
      if (batch.head.openTurnId) putOpenTurn.run(batch.threadId, batch.head.openTurnId);
      else dropOpenTurn.run(batch.threadId);
      if (batch.head.revert) putOpenRevert.run(batch.threadId, batch.head.revert.revertId);
      else dropOpenRevert.run(batch.threadId);
      if (batch.snapshot) putSnapshot.run(batch.threadId, pack(batch.snapshot));
      putReceipt.run(batch.receipt.commandId, batch.threadId, batch.receipt.at, pack(batch.receipt));
      if (Number.isFinite(this.maxReceiptsPerThread)) trimReceipts.run(batch.threadId, batch.threadId, this.maxReceiptsPerThread);
      return events;
    });
  }

  lastSeq(): number {
    return Number(this.db.prepare('select max(seq) as seq from log').get()?.seq ?? 0);
  }

  readReceipt(commandId: string): Receipt | undefined {
    return decode(this.db.prepare('select data from receipts where command_id = ?').get(commandId));
  }

  readTurn(threadId: string, turnId: string): TurnView | undefined {
    return decode<TurnView>(this.db.prepare('select data from turns where thread_id = ? and turn_id = ?').get(threadId, turnId));
  }

  readView(threadId: string): ThreadView | undefined {
    const head = decode<ThreadHead>(this.db.prepare('select data from threads where thread_id = ?').get(threadId));
    if (!head) return undefined;
    const turns: Record<string, TurnView> = {};
    for (const row of this.db.prepare('select data from turns where thread_id = ?').all(threadId)) {
      const turn = decode<TurnView>(row)!;
      turns[turn.id] = turn;
    }
    return { ...head, turns };
  }

  readSnapshot(threadId: string): ActorSnapshotRecord | undefined {
    return decode(this.db.prepare('select data from snapshots where thread_id = ?').get(threadId));
  }

  readThreadEvents(threadId: string, after: number, limit: number): StoredEvent[] {
    return this.db
      .prepare('select data from log where thread_id = ? and thread_seq > ? order by thread_seq limit ?')
      .all(threadId, after, limit)
      .map((row) => decode<StoredEvent>(row)!);
  }

  readLog(after: number, limit: number): StoredEvent[] {
    return this.db.prepare('select data from log where seq > ? order by seq limit ?').all(after, limit).map((row) => decode<StoredEvent>(row)!);
  }

  *threadsNewestFirst(before: number | null, owner?: string | null): Iterable<ListedThread> {
    const rows = this.db
      .prepare('select s.data as data, l.seq as position from summaries s join log l on l.thread_id = s.thread_id and l.thread_seq = 1 where l.seq < ? order by l.seq desc')
      .all(before ?? Number.MAX_SAFE_INTEGER);
    for (const row of rows) {
      const summary = decode<ThreadSummary>(row)!;
      if (owner === undefined || summary.owner === owner) yield { position: Number(row.position), summary };
    }
  }

  readSummary(threadId: string): ThreadSummary | undefined {
    return decode(this.db.prepare('select data from summaries where thread_id = ?').get(threadId));
  }

  openReverts(): Array<{ threadId: string; revertId: string }> {
    return this.db.prepare('select thread_id, revert_id from open_reverts').all().map((row) => ({ threadId: String(row.thread_id), revertId: String(row.revert_id) }));
  }

  openTurns(): Array<{ threadId: string; turnId: string }> {
    return this.db.prepare('select thread_id, turn_id from open_turns').all().map((row) => ({ threadId: String(row.thread_id), turnId: String(row.turn_id) }));
  }

  async commit(batch: CommitBatch): Promise<StoredEvent[]> {
    return this.write(batch);
  }

  async commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void> {
    this.db.prepare('insert or ignore into receipts (command_id, thread_id, at, data) values (?, ?, ?, ?)').run(receipt.commandId, receipt.threadId, receipt.at, pack(receipt));
  }

  async expireReceipts(olderThan: number, batchSize: number): Promise<number> {
    return this.db.prepare('delete from receipts where command_id in (select command_id from receipts where at < ? order by at limit ?)').run(olderThan, batchSize).changes;
  }

  capReceipts(maxPerThread: number): void {
    this.maxReceiptsPerThread = maxPerThread;
  }

  receiptTotal(): number {
    return Number(this.db.prepare('select count(*) as n from receipts').get()?.n ?? 0);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
