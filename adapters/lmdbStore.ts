import { type Database, type RootDatabase, open } from 'lmdb';
import { type ActorSnapshotRecord, type CommitBatch, type DomainEvent, type ListedThread, type QueuedTurnView, type Receipt, type ReplicaMark, type ReplicaStore, type RequestHeader, type StoredEvent, type ThreadHead, type ThreadSummary, type ThreadView, type TurnView, TurnloomError, queuedTurnView, summarize } from '../domain/index.ts';
import { prepareDataFolder } from './dataFolder.ts';
import { GroupCommit } from './groupCommit.ts';
import { InternedHeaders } from './internedHeaders.ts';
import { type ProcessIdentity, currentProcess, isAlive } from './processIdentity.ts';
import { type GrownText, type PieceKey, type PieceWrite, grownText, joinTurn, splitTurn } from './turnRows.ts';

/** The folder is held by another live process: two writers would corrupt each other's threads. */
export class DataFolderLocked extends TurnloomError {
  readonly holder: ProcessIdentity;

  constructor(path: string, holder: ProcessIdentity) {
    super(
      'conflict',
      `data folder ${path} is in use by another turnloom process (pid ${holder.pid} on ${holder.host}, since ${new Date(holder.since).toISOString()}); stop it first, or use another data folder`,
      { path, holder },
    );
    this.name = 'DataFolderLocked';
    this.holder = holder;
  }
}

/**
 * The layout this code writes; a folder of an older one is converted once,
 * on open. 1: a queued turn's input lives only in the log (the thread row
 * keeps a small entry), and input steered into a turn is a piece of it.
 * 2: no `summaries` database: a thread's summary is derived from its row,
 * which every commit writes anyway (one B-tree fewer a commit).
 * 3: the log keeps a command's events as one value (`LoggedCommand`), and
 * `threadLog` one entry a command; both keyed by the command's last event,
 * so the first key at or past an event's is the command holding it. What
 * layout 2 wrote, one value and one entry an event, reads as commands of
 * one event each, so the upgrade converts nothing.
 */
const LAYOUT = 3;

/**
 * A command's events as the log keeps them from layout 3 on, under the
 * sequence of its last event: the envelope once, not once an event. Its
 * events' sequences and thread sequences are contiguous (`commit` holds
 * that), so each event's place follows from the key and `threadSeq`.
 */
interface LoggedCommand {
  threadId: string;
  /** The thread sequence of the first event. */
  threadSeq: number;
  commandId: string;
  at: number;
  events: DomainEvent[];
}

/** A value of `log`: a command, or (written before layout 3) one event with its place. */
type LogValue = LoggedCommand | StoredEvent;

/** A queue entry as thread rows held it before layout 1: with its whole input. */
type LegacyQueuedTurn = Omit<QueuedTurnView, 'seq' | 'preview' | 'bytes'> & { input: { text: string } };

/** What `meta` holds, by key. */
interface Meta {
  owner: ProcessIdentity;
  layout: number;
  /** In a cluster: which engine this folder belongs to, which stream it copies, and how far. */
  replica: ReplicaMark;
  /** When the folder last took a write asked only to learn whether it takes writes (`checkWritable`). */
  probe: number;
}

/** A key of `threadReceipts`: one receipt of a thread, or the thread alone, under which its count is kept. */
type ThreadReceiptKey = string | [threadId: string, at: number, commandId: string];

/**
 * The keyspace, one LMDB environment with a database per concern
 * (all values msgpack):
 *
 * | database    | key                     | value                          |
 * |-------------|-------------------------|--------------------------------|
 * | `log`       | seq of a command's last event | LoggedCommand (the append-only log; before layout 3, a StoredEvent under each event's seq) |
 * | `threadLog` | [threadId, threadSeq of a command's last event] | that event's seq (each thread's index, an entry a command) |
 * | `receipts`  | commandId (a lease's writes: one id per lease) | Receipt (at most the engine's bound per thread, for a day) |
 * | `snapshots` | threadId                | ActorSnapshotRecord            |
 * | `threads`   | threadId                | ThreadHead (read model row; queued turns as small entries, their inputs are in `log`) |
 * | `turns`     | [threadId, turnId]      | TurnView without its large fields (read model row) |
 * | `turnPieces` | [threadId, turnId, ownerId, field, offset] | a text piece, a tool input/output or a steered input (see `turnRows.ts`) |
 * | `openTurns` | threadId                | turnId (what repair looks at)  |
 * | `openReverts` | threadId              | revertId (a revert under way: repair ends it after a crash) |
 * | `receiptAges` | [at, commandId]       | 1 (receipts oldest first, for expiry) |
 * | `threadReceipts` | [threadId, at, commandId]; threadId | 1 (each thread's receipts oldest first, for its bound); under the bare threadId, how many it has |
 * | `threadOrder` | seq of `thread.created` | threadId (listing, newest first) |
 * | `ownerThreads` | [owner or '', seq of `thread.created`] | threadId (one owner's listing) |
 * | `headers`   | header digest           | RequestHeader (each distinct one once: thread rows and `request.header` events in `log` hold `{ ref: digest }`) |
 * | `meta`      | `owner`, `layout`, `replica`, `probe` | ProcessIdentity (the folder lock); the layout version; in a cluster, the ReplicaMark (how far each shard is copied); the last write tried to learn whether the folder takes writes |
 */
export class LmdbStore implements ReplicaStore {
  private readonly env: RootDatabase;
  private readonly log: Database<LogValue, number>;
  private readonly threadLog: Database<number, [string, number]>;
  private readonly receipts: Database<Receipt, string>;
  private readonly snapshots: Database<ActorSnapshotRecord, string>;
  private readonly threads: Database<ThreadHead, string>;
  private readonly turns: Database<TurnView, [string, string]>;
  private readonly turnPieces: Database<unknown, [string, string, ...PieceKey]>;
  private readonly openTurnIndex: Database<string, string>;
  private readonly openRevertIndex: Database<string, string>;
  private readonly receiptAges: Database<1, [number, string]>;
  private readonly threadReceipts: Database<number, ThreadReceiptKey>;
  private readonly threadOrder: Database<string, number>;
  private readonly ownerThreads: Database<string, [string, number]>;
  private readonly headers: InternedHeaders;
  private readonly meta: Database<Meta[keyof Meta], keyof Meta>;
  private readonly owner: ProcessIdentity;
  private readonly group: GroupCommit;
  private maxReceiptsPerThread = Number.POSITIVE_INFINITY;

  private constructor(path: string) {
    prepareDataFolder(path);
    // Always a folder: lmdb-js would otherwise take a path with a dot in its name (`state.v2`) for a file.
    // Room for the databases below and a few more to come (each costs a little memory per environment).
    this.env = open({ path, maxDbs: 32, noSubdir: false });
    this.log = this.env.openDB({ name: 'log' });
    this.threadLog = this.env.openDB({ name: 'threadLog' });
    this.receipts = this.env.openDB({ name: 'receipts' });
    this.snapshots = this.env.openDB({ name: 'snapshots' });
    this.threads = this.env.openDB({ name: 'threads' });
    this.turns = this.env.openDB({ name: 'turns' });
    this.turnPieces = this.env.openDB({ name: 'turnPieces' });
    this.openTurnIndex = this.env.openDB({ name: 'openTurns' });
    this.openRevertIndex = this.env.openDB({ name: 'openReverts' });
    this.receiptAges = this.env.openDB({ name: 'receiptAges' });
    this.threadReceipts = this.env.openDB({ name: 'threadReceipts' });
    this.threadOrder = this.env.openDB({ name: 'threadOrder' });
    this.ownerThreads = this.env.openDB({ name: 'ownerThreads' });
    this.headers = new InternedHeaders(this.env.openDB<RequestHeader, string>({ name: 'headers' }));
    this.meta = this.env.openDB({ name: 'meta' });
    this.owner = currentProcess();
    this.group = new GroupCommit(this.env);
    try {
      this.refuseNewerLayout(path);
      this.lock(path);
    } catch (error) {
      void this.env.close();
      throw error;
    }
    this.indexThreadOrder();
    this.indexReceiptsByThread();
    this.splitLegacyTurns();
    this.upgradeLayout();
  }

  /**
   * A folder a newer turnloom converted is left as it is: this code would
   * neither read what that layout moved nor keep what it keeps (before
   * layout 2, for one, a listing read summaries that layout 2 no longer has).
   */
  private refuseNewerLayout(path: string): void {
    const layout = (this.meta.get('layout') as Meta['layout'] | undefined) ?? 0;
    if (layout > LAYOUT) {
      throw new TurnloomError('conflict', `data folder ${path} was written by a newer turnloom (layout ${layout}; this one reads up to ${LAYOUT}): upgrade turnloom, or use another data folder`, { path, layout, readable: LAYOUT });
    }
  }

  /** Converts a folder of an older layout in one transaction, so a crash halfway leaves it as it was. */
  private upgradeLayout(): void {
    const layout = (this.meta.get('layout') as Meta['layout'] | undefined) ?? 0;
    if (layout >= LAYOUT) return;
    this.env.transactionSync(() => {
      if (layout < 2) this.upgradeToLayout2();
      this.meta.put('layout', LAYOUT);
    });
  }

  /** Layout 1 (and before) to 2: queue entries and steered input out of the rows, and no summaries. */
  private upgradeToLayout2(): void {
    for (const { key: threadId, value: head } of this.threads.getRange({})) {
      const queue = (head.queue ?? []) as Array<QueuedTurnView | LegacyQueuedTurn>;
      if (queue.some((entry) => 'input' in entry)) this.threads.put(threadId, { ...head, queue: this.queueFromLog(threadId, queue) });
    }
    for (const { key, value: row } of this.turns.getRange({})) {
      if (!row.inbox?.some((item) => item.text !== '')) continue;
      const turn = this.withPieces(key[0], row);
      // Its pieces hold all of it but the steered texts, which were in the row.
      this.putTurn(key[0], { ...turn, inbox: turn.inbox.map((item) => ({ ...item, text: '' })) }, turn);
    }
    // Layout 1's summaries go; a folder that never had them is not given an empty database for them (`create: false`: none).
    // (lmdb-js reads `create`, its types do not list it.)
    const summaries = this.env.openDB({ name: 'summaries', create: false } as { name: string }) as Database | undefined;
    if (summaries) for (const key of summaries.getKeys({})) summaries.remove(key);
  }

  /** Each queue entry of a thread row written before layout 1, rebuilt from the `turn.queued` in the log that queued it. */
  private queueFromLog(threadId: string, queue: ReadonlyArray<QueuedTurnView | LegacyQueuedTurn>): QueuedTurnView[] {
    const queuedSeq = new Map<string, number>();
    for (let after = 0; ; ) {
      const events = this.readThreadEvents(threadId, after, 1_000);
      if (events.length === 0) break;
      for (const { threadSeq, event } of events) if (event.type === 'turn.queued') queuedSeq.set(event.queuedTurnId, threadSeq);
      after = events.at(-1)!.threadSeq;
    }
    return queue.map((entry) => {
      if (!('input' in entry)) return entry;
      const seq = queuedSeq.get(entry.turnId);
      if (seq === undefined) throw new Error(`thread ${threadId}: queued turn ${entry.turnId} has no turn.queued in the log`);
      return queuedTurnView(entry, seq, entry.queuedAt);
    });
  }

  /** Folders written before turns had pieces keep their large fields in the row: they are split once, on open. */
  private splitLegacyTurns(): void {
    if ((this.turnPieces.getStats() as { entryCount: number }).entryCount > 0) return;
    this.env.transactionSync(() => {
      for (const { key, value } of this.turns.getRange({})) this.putTurn(key[0], undefined, value);
    });
  }

  /** Folders written before the listing had its indexes get them: each thread's place is its first event's sequence. */
  private indexThreadOrder(): void {
    if ((this.threadOrder.getStats() as { entryCount: number }).entryCount > 0) return;
    this.env.transactionSync(() => {
      for (const { key: threadId, value: head } of this.threads.getRange({})) {
        const seq = this.firstEventSeq(threadId);
        if (seq !== 0) this.indexThread(seq, threadId, head.owner ?? null);
      }
    });
  }

  /**
   * Folders written before receipts were bounded per thread (under one
   * global cap) have no thread index, and a thread's receipts could be
   * neither counted nor trimmed without it. It is built once, in one
   * transaction, so a crash halfway leaves the folder as it was and the next
   * open builds it whole; the old cap keeps it small enough for that. A
   * thread already past its bound is brought within it by its next write.
   */
  private indexReceiptsByThread(): void {
    if ((this.threadReceipts.getStats() as { entryCount: number }).entryCount > 0) return;
    this.env.transactionSync(() => {
      const counts = new Map<string, number>();
      for (const { value: receipt } of this.receipts.getRange({})) {
        this.threadReceipts.put([receipt.threadId, receipt.at, receipt.commandId], 1);
        counts.set(receipt.threadId, (counts.get(receipt.threadId) ?? 0) + 1);
      }
      for (const [threadId, count] of counts) this.threadReceipts.put(threadId, count);
    });
  }

  private indexThread(position: number, threadId: string, owner: string | null): void {
    this.threadOrder.put(position, threadId);
    this.ownerThreads.put([owner ?? '', position], threadId);
  }

  /**
   * Takes the folder for this process, or throws `DataFolderLocked`. The
   * check and the claim are one LMDB write transaction, which LMDB
   * serialises across processes, so two engines starting together cannot
   * both win; a holder that died (kill -9) is recognised and replaced.
   */
  private lock(path: string): void {
    this.env.transactionSync(() => {
      const holder = this.meta.get('owner') as Meta['owner'] | undefined;
      if (holder && isAlive(holder)) throw new DataFolderLocked(path, holder);
      this.meta.putSync('owner', this.owner);
    });
  }

  /** Opens (creating if needed) the store in a directory this process then holds until `close`. */
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
    const row = this.threads.get(threadId);
    if (!row) return undefined;
    const head = this.headers.head(row);
    const turns: Record<string, TurnView> = {};
    for (const { key, value } of this.turns.getRange({ start: [threadId], end: [threadId, '\uffff'] })) turns[key[1]] = this.withPieces(threadId, value);
    // Rows written before threads had a queue, a context or reverts that hold the thread lack them.
    return {
      ...head,
      queue: head.queue ?? [],
      compaction: head.compaction ?? 'auto',
      context: head.context ?? null,
      revert: head.revert ?? null,
      reverts: (head.reverts ?? []).map((revert) => ({ ...revert, saved: revert.saved ?? null })),
      turns,
    };
  }

  readTurn(threadId: string, turnId: string): TurnView | undefined {
    const row = this.turns.get([threadId, turnId]);
    return row && this.withPieces(threadId, row);
  }

  private withPieces(threadId: string, row: TurnView): TurnView {
    const pieces = this.turnPieces.getRange({ start: [threadId, row.id], end: [threadId, row.id, '\uffff'] });
    return joinTurn(
      row,
      pieces.map(({ key, value }) => ({ key: key.slice(2) as PieceKey, value })),
    );
  }

  /** Writes a turn's row and the pieces that changed since `previous` (what the store holds of it). */
  private putTurn(threadId: string, previous: TurnView | undefined, turn: TurnView, grown?: GrownText): void {
    const { row, writes } = splitTurn(previous, turn, grown);
    this.turns.put([threadId, turn.id], row);
    for (const write of writes) this.putPiece(threadId, turn.id, write);
  }

  private putPiece(threadId: string, turnId: string, write: PieceWrite): void {
    if (write.op === 'append') {
      this.turnPieces.put([threadId, turnId, write.ownerId, write.field, write.offset], write.text);
      return;
    }
    for (const key of this.turnPieces.getKeys({ start: [threadId, turnId, write.ownerId, write.field], end: [threadId, turnId, write.ownerId, write.field, Number.MAX_SAFE_INTEGER] })) {
      this.turnPieces.remove(key);
    }
    if (write.value !== null && write.value !== '') this.turnPieces.put([threadId, turnId, write.ownerId, write.field, 0], write.value);
  }

  readSnapshot(threadId: string): ActorSnapshotRecord | undefined {
    return this.snapshots.get(threadId);
  }

  readThreadEvents(threadId: string, after: number, limit: number): StoredEvent[] {
    // The thread's first entry at or past `after + 1` is the command holding that event.
    const commands = this.threadLog.getRange({ start: [threadId, after + 1], end: [threadId, Number.MAX_SAFE_INTEGER] }).map(({ value: seq }) => ({ key: seq, value: this.log.get(seq)! }));
    return this.eventsPast(commands, (stored) => stored.threadSeq > after, limit);
  }

  readLog(after: number, limit: number): StoredEvent[] {
    return this.eventsPast(this.log.getRange({ start: after + 1 }), (stored) => stored.seq > after, limit);
  }

  /** Up to `limit` events of `commands` (log values by their keys, in order), from the first that is `past` the reader's place on. */
  private eventsPast(commands: Iterable<{ key: number; value: LogValue }>, past: (stored: StoredEvent) => boolean, limit: number): StoredEvent[] {
    const events: StoredEvent[] = [];
    if (limit <= 0) return events;
    for (const { key, value } of commands) {
      for (const stored of this.eventsOf(key, value)) {
        if (past(stored) && events.push(stored) === limit) return events;
      }
    }
    return events;
  }

  /** The events of the log value under `lastSeq`, each with its place. */
  private eventsOf(lastSeq: number, value: LogValue): StoredEvent[] {
    if (!('events' in value)) return [{ ...value, event: this.headers.event(value.event) }];
    const { threadId, threadSeq, commandId, at } = value;
    const first = lastSeq - value.events.length + 1;
    return value.events.map((event, index) => ({ seq: first + index, threadId, threadSeq: threadSeq + index, commandId, at, event: this.headers.event(event) }));
  }

  *threadsNewestFirst(before: number | null, owner?: string | null): Iterable<ListedThread> {
    const entries =
      owner === undefined
        ? this.threadOrder.getRange({ reverse: true, ...(before === null ? {} : { start: before - 1 }) }).map(({ key, value }) => ({ position: key, threadId: value }))
        : this.ownerThreads
            .getRange({ reverse: true, start: [owner ?? '', before === null ? Number.MAX_SAFE_INTEGER : before - 1], end: [owner ?? '', -1] })
            .map(({ key, value }) => ({ position: key[1], threadId: value }));
    for (const { position, threadId } of entries) {
      const summary = this.readSummary(threadId);
      if (summary) yield { position, summary };
    }
  }

  readSummary(threadId: string): ThreadSummary | undefined {
    const row = this.threads.get(threadId);
    // Its header (a reference here) is not part of a summary. Rows written before threads had a queue lack one.
    return row && summarize({ ...row, queue: row.queue ?? [], turns: {} });
  }

  openTurns(): Array<{ threadId: string; turnId: string }> {
    return [...this.openTurnIndex.getRange({}).map(({ key, value }) => ({ threadId: key, turnId: value }))];
  }

  lastEventSeq(threadId: string): number {
    for (const seq of this.threadLog.getRange({ start: [threadId, Number.MAX_SAFE_INTEGER], end: [threadId, 0], reverse: true, limit: 1 }).map(({ value }) => value)) return seq;
    return 0;
  }

  readReplica(): ReplicaMark | undefined {
    const mark = this.meta.get('replica') as Meta['replica'] | undefined;
    // A mark of a copy made before shards has one position for the whole log, which no shard can use.
    return mark && { ...mark, positions: mark.positions ?? {} };
  }

  async writeReplica(mark: ReplicaMark): Promise<void> {
    await this.group.run(() => {
      const current = this.readReplica();
      const same = current?.engineId === mark.engineId && current.source === mark.source;
      const positions: Record<number, number> = { ...(same ? current.positions : {}) };
      let moved = !same;
      for (const [shard, position] of Object.entries(mark.positions)) {
        if (position > (positions[Number(shard)] ?? 0)) {
          positions[Number(shard)] = position;
          moved = true;
        }
      }
      if (moved) this.meta.put('replica', { ...mark, positions });
    });
  }

  async checkWritable(): Promise<void> {
    await this.group.run(() => this.meta.put('probe', Date.now()));
  }

  firstEventSeq(threadId: string): number {
    // The thread's first entry is its first command's, holding thread sequences 1 to the entry's key.
    for (const { key, value } of this.threadLog.getRange({ start: [threadId, 1], end: [threadId, Number.MAX_SAFE_INTEGER], limit: 1 })) return value - key[1] + 1;
    return 0;
  }

  openReverts(): Array<{ threadId: string; revertId: string }> {
    return [...this.openRevertIndex.getRange({}).map(({ key, value }) => ({ threadId: key, revertId: value }))];
  }

  commit(batch: CommitBatch): Promise<StoredEvent[]> {
    return this.group.run(() => {
      const head = this.threads.get(batch.threadId);
      const currentSeq = head?.seq ?? 0;
      if (currentSeq !== batch.expectedThreadSeq) {
        throw new TurnloomError('conflict', `thread ${batch.threadId} moved on (at ${currentSeq}, expected ${batch.expectedThreadSeq})`);
      }
      if (this.receipts.get(batch.commandId)) throw new TurnloomError('conflict', `command ${batch.commandId} already has a receipt`);
      const lastWrite = batch.receipt.commandId === batch.commandId ? undefined : this.receipts.get(batch.receipt.commandId);
      if (lastWrite?.outcome === 'accepted' && batch.receipt.outcome === 'accepted' && (lastWrite.writeSeq ?? 0) >= (batch.receipt.writeSeq ?? 0)) {
        throw new TurnloomError('conflict', `write ${batch.receipt.writeSeq} under ${batch.receipt.commandId} comes after write ${lastWrite.writeSeq}`);
      }
      let seq = batch.firstSeq === undefined ? this.lastSeq() : batch.firstSeq - 1;
      const events: StoredEvent[] = batch.events.map(({ threadSeq, event }, index) => {
        // A command's events are kept as one value, whose readers place each event by its index in it.
        if (threadSeq !== currentSeq + 1 + index) throw new TurnloomError('internal', `thread ${batch.threadId}: command ${batch.commandId} writes thread sequence ${threadSeq} where ${currentSeq + 1 + index} is next`);
        seq += 1;
        return { seq, threadId: batch.threadId, threadSeq, commandId: batch.commandId, at: batch.at, event };
      });
      const last = events.at(-1);
      if (last) {
        const logged: LoggedCommand = { threadId: batch.threadId, threadSeq: currentSeq + 1, commandId: batch.commandId, at: batch.at, events: batch.events.map(({ event }) => this.headers.eventRow(event)) };
        // Past the last key, LMDB can fill each page whole instead of splitting it in half; a copy's positions (a cluster's
        // shards, copied apart) can come out of order, so only sequences this store gives out are appended.
        this.log.putSync(last.seq, logged, { append: batch.firstSeq === undefined });
        this.threadLog.put([batch.threadId, last.threadSeq], last.seq);
      }
      if (batch.expectedThreadSeq === 0 && events[0]) this.indexThread(events[0].seq, batch.threadId, batch.head.owner);
      this.threads.put(batch.threadId, this.headers.headRow(batch.head));
      const grown = grownText(batch.events);
      for (const { previous, turn } of batch.turns) this.putTurn(batch.threadId, previous ?? undefined, turn, grown);
      // The indexes are written only when they change: each B-tree a commit touches is pages more to write and sync.
      const openTurnId = batch.head.openTurnId ?? null;
      if (openTurnId !== (head?.openTurnId ?? null)) {
        if (openTurnId) this.openTurnIndex.put(batch.threadId, openTurnId);
        else this.openTurnIndex.remove(batch.threadId);
      }
      const revertId = batch.head.revert?.revertId ?? null;
      if (revertId !== (head?.revert?.revertId ?? null)) {
        if (revertId) this.openRevertIndex.put(batch.threadId, revertId);
        else this.openRevertIndex.remove(batch.threadId);
      }
      if (batch.snapshot) this.snapshots.put(batch.threadId, batch.snapshot);
      this.putReceipt(batch.receipt);
      return events;
    });
  }

  /**
   * Writes a receipt in the transaction of what it answers. A receipt under
   * an id that has one already (a lease's last write, see `Receipt`, whose
   * id names its thread) replaces it, and the thread's count stays. Past its
   * thread's bound, that thread's oldest go at once, so the bound holds
   * whatever the load, and a busy thread never evicts a quiet one's.
   */
  private putReceipt(receipt: Receipt): void {
    const replaced = this.receipts.get(receipt.commandId);
    if (replaced) this.unindexReceipt(replaced.threadId, replaced.at, replaced.commandId);
    this.receipts.put(receipt.commandId, receipt);
    this.receiptAges.put([receipt.at, receipt.commandId], 1);
    this.threadReceipts.put([receipt.threadId, receipt.at, receipt.commandId], 1);
    if (replaced) return;
    const count = this.threadReceiptCount(receipt.threadId) + 1;
    const excess = count - this.maxReceiptsPerThread;
    this.threadReceipts.put(receipt.threadId, excess > 0 ? count - this.forgetOldest(receipt.threadId, excess) : count);
  }

  /**
   * How many receipts the thread has. The count is kept in the thread index,
   * under the bare thread id (which sorts just before the thread's entries),
   * so bounding a thread costs no scan, and its count no database of its own.
   */
  private threadReceiptCount(threadId: string): number {
    return this.threadReceipts.get(threadId) ?? 0;
  }

  /** Forgets up to `count` of the thread's oldest receipts and answers how many went; its count is the caller's to keep. */
  private forgetOldest(threadId: string, count: number): number {
    const oldest = [...this.threadReceipts.getKeys({ start: [threadId, -Infinity], end: [threadId, Infinity], limit: count })] as Array<[string, number, string]>;
    for (const [, at, commandId] of oldest) this.forgetReceipt(threadId, at, commandId);
    return oldest.length;
  }

  private forgetReceipt(threadId: string, at: number, commandId: string): void {
    this.unindexReceipt(threadId, at, commandId);
    this.receipts.remove(commandId);
  }

  private unindexReceipt(threadId: string, at: number, commandId: string): void {
    this.receiptAges.remove([at, commandId]);
    this.threadReceipts.remove([threadId, at, commandId]);
  }

  capReceipts(maxPerThread: number): void {
    this.maxReceiptsPerThread = maxPerThread;
  }

  receiptTotal(): number {
    return (this.receipts.getStats() as { entryCount: number }).entryCount;
  }

  async commitRejection(receipt: Extract<Receipt, { outcome: 'rejected' }>): Promise<void> {
    await this.group.run(() => {
      if (!this.receipts.get(receipt.commandId)) this.putReceipt(receipt);
    });
  }

  async expireReceipts(olderThan: number, batchSize: number): Promise<number> {
    // Through the group's synchronous transaction: lmdb-js's async one, failing on a full disk, also leaves a rejection nobody can handle.
    return this.group.run(() => {
      const doomed = [...this.receiptAges.getKeys({ end: [olderThan], limit: batchSize })];
      const forgotten = new Map<string, number>();
      for (const [at, commandId] of doomed) {
        const { threadId } = this.receipts.get(commandId)!;
        this.forgetReceipt(threadId, at, commandId);
        forgotten.set(threadId, (forgotten.get(threadId) ?? 0) + 1);
      }
      for (const [threadId, count] of forgotten) {
        const left = this.threadReceiptCount(threadId) - count;
        // A thread whose receipts all expired keeps no count: threads live forever, their receipts do not.
        if (left > 0) this.threadReceipts.put(threadId, left);
        else this.threadReceipts.remove(threadId);
      }
      return doomed.length;
    });
  }

  async close(): Promise<void> {
    // The folder's lock is let go if the disk takes the write; if not (it is full), the next opener finds this process gone and takes it all the same.
    // Synchronous: lmdb-js's async transaction, failing there, also leaves a rejection nobody can handle, which would end the process.
    try {
      this.env.transactionSync(() => {
        const holder = this.meta.get('owner') as Meta['owner'] | undefined;
        if (holder && holder.pid === this.owner.pid && holder.since === this.owner.since) this.meta.remove('owner');
      });
    } catch {
      // Left to the next opener, as above.
    }
    await this.env.close();
  }
}
