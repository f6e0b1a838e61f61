import { createHash } from 'node:crypto';
import { type DomainEvent, IllegalTransition, type Inspection, type Logger, errorFields, silentLogger, type ListedThread, type Receipt, type StoredEvent, type ThreadHead, type ThreadStore, type ThreadSummary, type ThreadView, type TurnView, TurnloomError, MAX_COMMAND_NESTING, summarize, wellFormed } from '../../domain/index.ts';
import { type Command, type CommandResult, type Refusal, isSystemCommand, systemCommandId } from './commands.ts';
import { decide } from './decide.ts';
import { machinesVersion } from './machinesVersion.ts';
import { emptyThreadView } from '../../protocol/projector.ts';
import { routeEvent } from '../../machines/routeEvent.ts';
import { ThreadActors } from './threadActors.ts';
import { ThreadDraft, refusedEvent } from './threadDraft.ts';
import { type QueueLimits, defaultQueueLimits } from './turnQueue.ts';

export interface EngineOptions {
  store: ThreadStore;
  now?: () => number;
  /** A loaded thread unused this long is passivated (actors stopped, state on disk). */
  idleMs?: number;
  /** At most this many threads stay loaded; the least recently used go first. */
  maxLoadedThreads?: number;
  /** Persist the actor tree at least every this many events (and at every turn boundary). */
  snapshotEvery?: number;
  /**
   * Receipts (what makes a retried command id safe) are forgotten after
   * `ttlMs` (default 24 h), and a thread keeps at most `maxPerThread`
   * (default 1,000) of them: a receipt written past it forgets that thread's
   * oldest in the same transaction. The bound is per thread, not per engine,
   * so a busy thread cannot cut short a quiet thread's day. A retry after
   * either is a new command.
   */
  receipts?: { ttlMs?: number; maxPerThread?: number };
  /**
   * The largest one event may be, as JSON (default 508 KiB: half of NATS's
   * default 1 MiB payload, less room for the envelope). A client command
   * over it is refused; system output over it is cut with a note.
   */
  maxEventBytes?: number;
  /**
   * How much input may wait on one thread: turns in its queue, and input
   * steered into its open turn that no step took yet, at most `maxTurns`
   * (default 100) and `maxBytes` of text in UTF-8 (default 4 MiB) of each.
   * A `turn.start` past them is refused with `queue_full` and writes nothing.
   */
  queue?: Partial<QueueLimits>;
  /** Where it says what went wrong outside a command (a listener that threw, receipts it could not expire); default: nowhere. */
  log?: Logger;
}

export interface SubmitOptions {
  /**
   * The client chose this command id and may retry with it, so a rejection
   * is worth keeping as its answer. Ids the server made up are never sent
   * again: their rejections are not stored.
   */
  clientCommandId?: boolean;
}

/** A command another engine decided, as the log shared with it holds it. */
export interface ReplicatedCommand {
  commandId: string;
  at: number;
  events: Array<{ threadSeq: number; event: DomainEvent }>;
  receipt: Receipt;
  /** The global sequence of its first event, as the shared log numbers it. */
  firstSeq: number;
}

export type CommittedListener = (events: readonly StoredEvent[]) => void;
export type InspectionListener = (inspection: Inspection) => void;

interface LoadedThread {
  actors: ThreadActors;
  view: ThreadView;
  snapshotSeq: number;
  lastUsed: number;
}

/**
 * Rejections that are answers about the thread, and so are kept for the
 * command id; others write nothing (`queue_full` among them: its answer
 * changes as the queue drains, so the same command may be sent again).
 */
const storedRejections = new Set(['illegal_transition', 'conflict']);

/** Receipts one expiry transaction forgets at most: a short transaction holds commits up only briefly. */
const EXPIRY_BATCH = 1_000;

/** What makes two commands under one id the same command: everything but the id, and the trace a retry comes in (a new one each time). */
function fingerprintOf(command: Command): string {
  const { commandId: _ignored, ...rest } = command;
  if ('trace' in rest) delete rest.trace;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex');
}

/**
 * Where a command's answer is kept: a worker's write under a lease in the
 * lease's one receipt (with the write's number), any other command under
 * its own id. Receipts then grow with leases, not with writes.
 */
function receiptSlot(command: Command): { id: string; writeSeq?: number } {
  if (command.type === 'turn.record' && command.lease && command.seq !== undefined) {
    return { id: systemCommandId('record', command.threadId, command.turnId, command.lease.token), writeSeq: command.seq };
  }
  return { id: command.commandId };
}

function answer(receipt: Receipt, fingerprint: string, commandId: string): CommandResult {
  if (receipt.fingerprint !== fingerprint) {
    throw new TurnloomError('conflict', `command id ${commandId} was already used for a different command`, { commandId });
  }
  if (receipt.outcome === 'rejected') throw TurnloomError.fromJSON(receipt.error);
  const { threadId, fromThreadSeq, toThreadSeq, refused } = receipt;
  return { commandId, threadId, fromThreadSeq, toThreadSeq, diagnostics: refused.length, refused };
}

/** What a command decided on `draft` is answered: the range it takes in the thread's log, and what the machines refused. */
const resultOf = (command: Command, draft: ThreadDraft, refused: Refusal[]): CommandResult => ({
  commandId: command.commandId,
  threadId: command.threadId,
  fromThreadSeq: draft.base.seq + 1,
  toThreadSeq: draft.view.seq,
  diagnostics: refused.length,
  refused,
});

/**
 * The single writer of its threads. A command is decided by the thread's
 * lifecycle actors (on a staged copy), committed with its read model,
 * receipt and snapshot in one transaction, then delivered to the live actors
 * and published. Threads are virtual actors: loaded on first use from the
 * latest snapshot plus the events after it, and passivated when idle.
 */
export class Engine {
  private readonly store: ThreadStore;
  private readonly now: () => number;
  private readonly idleMs: number;
  private readonly maxLoaded: number;
  private readonly snapshotEvery: number;
  private readonly receiptTtlMs: number;
  private readonly maxEventBytes: number;
  private readonly queueLimits: QueueLimits;
  private readonly log: Logger;
  private expiring = false;
  private readonly loaded = new Map<string, LoadedThread>();
  private readonly locks = new Map<string, Promise<void>>();
  /** Commands queued or running per thread: a busy thread is never passivated. */
  private readonly queued = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<CommandResult>>();
  private readonly listeners = new Set<CommittedListener>();
  private readonly inspectors = new Set<InspectionListener>();
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(options: EngineOptions) {
    this.store = options.store;
    this.log = options.log ?? silentLogger;
    this.now = options.now ?? Date.now;
    this.idleMs = options.idleMs ?? 60_000;
    this.maxLoaded = options.maxLoadedThreads ?? 1_000;
    this.snapshotEvery = options.snapshotEvery ?? 100;
    this.receiptTtlMs = options.receipts?.ttlMs ?? 24 * 60 * 60 * 1_000;
    this.maxEventBytes = options.maxEventBytes ?? 508 * 1024;
    this.queueLimits = { maxTurns: options.queue?.maxTurns ?? defaultQueueLimits.maxTurns, maxBytes: options.queue?.maxBytes ?? defaultQueueLimits.maxBytes };
    this.store.capReceipts(options.receipts?.maxPerThread ?? 1_000);
  }

  /** Opens the engine on its store. Turns a dead process left open are settled by `CrashRepair`, once someone listens. */
  static async open(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options);
    engine.sweeper = setInterval(() => {
      engine.passivateIdle();
      void engine.expireReceipts();
    }, Math.max(1_000, engine.idleMs / 2));
    engine.sweeper.unref();
    return engine;
  }

  /**
   * Forgets receipts past their age, a batch at a time, until none is left;
   * resolves with how many went. Nothing caps the total but age, so a sweep
   * catches up with however many commands came in since the last one.
   */
  async expireReceipts(): Promise<number> {
    if (this.expiring || this.closed) return 0;
    this.expiring = true;
    try {
      const olderThan = this.now() - this.receiptTtlMs;
      let expired = 0;
      let batch: number;
      do {
        batch = await this.store.expireReceipts(olderThan, EXPIRY_BATCH);
        expired += batch;
      } while (batch === EXPIRY_BATCH && !this.closed);
      return expired;
    } catch (error) {
      this.log.error(errorFields(error), 'could not expire receipts');
      return 0;
    } finally {
      this.expiring = false;
    }
  }

  /** Committed events, in commit order per thread, after they are durable. */
  onCommitted(listener: CommittedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * What the lifecycle machines did for each command: after it is durable,
   * or at once for a command a machine refused whole (nothing was written).
   */
  onInspection(listener: InspectionListener): () => void {
    this.inspectors.add(listener);
    return () => this.inspectors.delete(listener);
  }

  private inspected(command: Command, at: number, what: Pick<Inspection, 'outcome' | 'threadSeq' | 'transitions' | 'refused'>): void {
    if (this.inspectors.size === 0) return;
    this.notify(this.inspectors, { threadId: command.threadId, commandId: command.commandId, command: command.type, at, ...what }, 'inspection');
  }

  private notify<T>(listeners: ReadonlySet<(value: T) => void>, value: T, what: string): void {
    for (const listener of listeners) {
      try {
        listener(value);
      } catch (error) {
        // The command is settled whatever a listener does; the others must still hear of it.
        this.log.error({ ...errorFields(error), listener: what }, 'a listener threw');
      }
    }
  }

  /**
   * Runs a command once. The same command id always gets the same answer:
   * the accepted sequence range, or the same rejection, and nothing new is written.
   */
  submit(input: Command, options: SubmitOptions = {}): Promise<CommandResult> {
    if (this.closed) return Promise.reject(new TurnloomError('unavailable', 'engine is closed'));
    // Whatever the source (API, provider, tool), nothing with a lone surrogate is stored, nor anything nested past what can be read back.
    let command: Command;
    try {
      command = wellFormed(input, MAX_COMMAND_NESTING);
    } catch (error) {
      return Promise.reject(error);
    }
    const pending = this.inflight.get(command.commandId);
    if (pending) {
      // The same id in flight shares the run, but a different payload under it is still a conflict.
      const fingerprint = fingerprintOf(command);
      const stored = () => this.recall(command, fingerprint);
      return pending.then(
        (result) => stored() ?? result,
        (error: unknown) => stored() ?? Promise.reject(error),
      );
    }
    const run = this.withThreadLock(command.threadId, () => this.process(command, options.clientCommandId ?? false));
    this.inflight.set(command.commandId, run);
    const forget = () => this.inflight.delete(command.commandId);
    run.then(forget, forget);
    return run;
  }

  private withThreadLock<T>(threadId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(threadId) ?? Promise.resolve();
    this.queued.set(threadId, (this.queued.get(threadId) ?? 0) + 1);
    const run = previous.then(task, task);
    // Registered before any caller awaits `run`, so the thread is idle again by the time they resume.
    const settled: Promise<void> = run.then(
      () => this.release(threadId, settled),
      () => this.release(threadId, settled),
    );
    this.locks.set(threadId, settled);
    return run;
  }

  private release(threadId: string, tail: Promise<void>): void {
    const left = (this.queued.get(threadId) ?? 1) - 1;
    if (left > 0) {
      this.queued.set(threadId, left);
      return;
    }
    this.queued.delete(threadId);
    if (this.locks.get(threadId) === tail) this.locks.delete(threadId);
  }

  /**
   * The answer a command already got, if it did. A lease's receipt answers
   * its last write only: an earlier one was answered before the last was
   * sent, so it comes again only from a confused sender, and is refused.
   */
  private recall(command: Command, fingerprint: string): CommandResult | undefined {
    const slot = receiptSlot(command);
    const receipt = this.store.readReceipt(slot.id);
    if (!receipt) return undefined;
    if (slot.writeSeq !== undefined && receipt.outcome === 'accepted') {
      const last = receipt.writeSeq ?? 0;
      if (last < slot.writeSeq) return undefined;
      if (last > slot.writeSeq) {
        throw new TurnloomError('conflict', `write ${slot.writeSeq} under this lease was followed by write ${last}: only a lease's last write may be sent again`, {
          commandId: command.commandId,
          writeSeq: slot.writeSeq,
          lastWriteSeq: last,
        });
      }
    }
    return answer(receipt, fingerprint, command.commandId);
  }

  private async process(command: Command, clientCommandId: boolean): Promise<CommandResult> {
    const fingerprint = fingerprintOf(command);
    const stored = this.recall(command, fingerprint);
    if (stored) return stored;

    const reject = async (error: TurnloomError): Promise<never> => {
      if (error instanceof IllegalTransition) {
        this.inspected(command, this.now(), { outcome: 'rejected', threadSeq: this.loaded.get(command.threadId)?.view.seq ?? 0, transitions: [], refused: [refusedEvent(error)] });
      }
      if (clientCommandId && storedRejections.has(error.code)) {
        await this.store.commitRejection({ commandId: command.commandId, fingerprint, threadId: command.threadId, at: this.now(), outcome: 'rejected', error: error.toJSON() });
      }
      throw error;
    };

    const existing = this.load(command.threadId);
    if (command.type === 'thread.create' && existing) {
      return reject(new TurnloomError('conflict', `thread ${command.threadId} already exists`, { threadId: command.threadId }));
    }
    if (command.type !== 'thread.create' && !existing) {
      throw new TurnloomError('not_found', `thread ${command.threadId} not found`, { threadId: command.threadId });
    }
    const at = this.now();
    const thread: LoadedThread = existing ?? {
      actors: ThreadActors.create(command.threadId),
      view: emptyThreadView(command.threadId, at),
      snapshotSeq: 0,
      lastUsed: at,
    };

    const draft = this.draftOf(thread, command, at);
    let refused: Refusal[];
    try {
      refused = decide(command, draft);
    } catch (error) {
      if (error instanceof TurnloomError) return reject(error);
      throw error;
    }

    const slot = receiptSlot(command);
    const receipt: Receipt = {
      commandId: slot.id,
      fingerprint,
      threadId: command.threadId,
      at,
      outcome: 'accepted',
      fromThreadSeq: draft.base.seq + 1,
      toThreadSeq: draft.view.seq,
      refused,
      ...(slot.writeSeq === undefined ? {} : { writeSeq: slot.writeSeq }),
    };
    const committed = await this.commitDraft(thread, draft, command.commandId, receipt);
    const view = draft.view;
    this.notify(this.listeners, committed, 'commit');
    this.inspected(command, at, { outcome: 'accepted', threadSeq: view.seq, transitions: draft.transitions, refused: draft.refusals });
    return resultOf(command, draft, refused);
  }

  private draftOf(thread: LoadedThread, command: Command, at: number): ThreadDraft {
    return new ThreadDraft(
      thread.actors,
      thread.view,
      at,
      { maxEventBytes: this.maxEventBytes, oversize: isSystemCommand(command) ? 'cut' : 'refuse', queue: this.queueLimits },
      (threadSeq) => this.store.readThreadEvents(command.threadId, threadSeq - 1, 1)[0]?.event,
    );
  }

  /**
   * Decides a command against a draft of its thread and drops the draft:
   * the answer `submit` would give now, with nothing written (no event, no
   * receipt). A worker checks a step this way (its request against the log)
   * before it calls the model, and writes the step with the call's answer.
   */
  check(input: Command): Promise<CommandResult> {
    if (this.closed) return Promise.reject(new TurnloomError('unavailable', 'engine is closed'));
    let command: Command;
    try {
      command = wellFormed(input, MAX_COMMAND_NESTING);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.withThreadLock(command.threadId, async () => {
      const thread = this.load(command.threadId);
      if (!thread) throw new TurnloomError('not_found', `thread ${command.threadId} not found`, { threadId: command.threadId });
      const draft = this.draftOf(thread, command, this.now());
      return resultOf(command, draft, decide(command, draft));
    });
  }

  /**
   * Commits a draft with its read model, receipt and (when due) snapshot,
   * then has the thread's tree adopt the very snapshots that were committed,
   * so it cannot disagree with the log.
   */
  private async commitDraft(thread: LoadedThread, draft: ThreadDraft, commandId: string, receipt: Receipt, firstSeq?: number): Promise<StoredEvent[]> {
    const view = draft.view;
    const { turns, ...head } = view;
    const snapshotDue = draft.touchedTurnBoundary() || view.seq - thread.snapshotSeq >= this.snapshotEvery;
    const stored = await this.store.commit({
      threadId: draft.threadId,
      commandId,
      at: draft.at,
      expectedThreadSeq: draft.base.seq,
      events: draft.events,
      head: head satisfies ThreadHead,
      turns: Object.values(turns)
        .filter((turn) => draft.base.turns[turn.id] !== turn)
        .map((turn) => ({ previous: draft.base.turns[turn.id] ?? null, turn })),
      snapshot: snapshotDue ? { threadSeq: view.seq, machinesVersion, actors: thread.actors.persist(draft.stagedActors()) } : null,
      receipt,
      ...(firstSeq === undefined ? {} : { firstSeq }),
    });
    thread.actors.adopt(draft.stagedActors());
    thread.view = view;
    if (snapshotDue) thread.snapshotSeq = view.seq;
    this.touch(draft.threadId, thread);
    this.evictOverflow();
    return stored;
  }

  /**
   * Takes in a command another engine decided, as the log it shares with
   * this one holds it (a cluster's stream): its events go through the same
   * machines into this engine's copy of the thread (read model, snapshots,
   * receipt), exactly as they went there. Resolves `false` when the copy
   * holds it already. Nothing is published or inspected: the engine that
   * decided it did that.
   */
  ingest(threadId: string, command: ReplicatedCommand): Promise<boolean> {
    if (this.closed) return Promise.reject(new TurnloomError('unavailable', 'engine is closed'));
    return this.withThreadLock(threadId, async () => {
      if (this.store.readReceipt(command.commandId) || this.holdsWrite(command.receipt)) return false;
      const existing = this.load(threadId);
      const baseSeq = existing?.view.seq ?? 0;
      const first = command.events[0]?.threadSeq;
      if (first !== undefined && first <= baseSeq) return false;
      if (first !== undefined && first !== baseSeq + 1) {
        throw new TurnloomError('internal', `thread ${threadId}: the log holds events from ${first} on, but this copy ends at ${baseSeq}`, { threadId, first, baseSeq });
      }
      if (!existing && first === undefined) return false;
      const thread: LoadedThread = existing ?? { actors: ThreadActors.create(threadId), view: emptyThreadView(threadId, command.at), snapshotSeq: 0, lastUsed: this.now() };
      const draft = new ThreadDraft(thread.actors, thread.view, command.at, { maxEventBytes: Number.MAX_SAFE_INTEGER, oversize: 'cut', queue: this.queueLimits }, (threadSeq) =>
        this.store.readThreadEvents(threadId, threadSeq - 1, 1)[0]?.event,
      );
      try {
        for (const { event } of command.events) draft.emit(event);
      } catch (error) {
        // Only other machine definitions decide otherwise on the same events: engines of a cluster must run one version.
        throw new TurnloomError('internal', `thread ${threadId}: this engine's machines (${machinesVersion}) refuse what another engine accepted in command ${command.commandId}: ${error instanceof Error ? error.message : String(error)}`, {
          threadId,
          commandId: command.commandId,
        });
      }
      await this.commitDraft(thread, draft, command.commandId, command.receipt, command.firstSeq);
      return true;
    });
  }

  /** Whether a lease's receipt here answers this write or a later one already. */
  private holdsWrite(receipt: Receipt): boolean {
    if (receipt.outcome !== 'accepted' || receipt.writeSeq === undefined) return false;
    const held = this.store.readReceipt(receipt.commandId);
    return held?.outcome === 'accepted' && (held.writeSeq ?? 0) >= receipt.writeSeq;
  }

  /** The thread, loaded if needed: snapshot + events after it; no snapshot of these machines means a full replay. */
  private load(threadId: string): LoadedThread | undefined {
    const cached = this.loaded.get(threadId);
    if (cached) {
      this.touch(threadId, cached);
      return cached;
    }
    const view = this.store.readView(threadId);
    if (!view) return undefined;
    const record = this.store.readSnapshot(threadId);
    const usable = record && record.machinesVersion === machinesVersion ? record : undefined;
    const actors = usable ? ThreadActors.restore(threadId, usable.actors) : ThreadActors.create(threadId);
    for (let after = usable?.threadSeq ?? 0; ; ) {
      const events = this.store.readThreadEvents(threadId, after, 1_000);
      if (events.length === 0) break;
      for (const { event } of events) actors.replay(routeEvent(event));
      after = events[events.length - 1]!.threadSeq;
    }
    const thread: LoadedThread = { actors, view, snapshotSeq: usable?.threadSeq ?? 0, lastUsed: this.now() };
    this.touch(threadId, thread);
    this.evictOverflow();
    return thread;
  }

  async getThread(threadId: string): Promise<ThreadView> {
    const view = this.loaded.get(threadId)?.view ?? this.store.readView(threadId);
    if (!view) throw new TurnloomError('not_found', `thread ${threadId} not found`, { threadId });
    return view;
  }

  /** One turn of a thread, without reading its other turns (what the reactors look at on start). */
  readTurn(threadId: string, turnId: string): TurnView | undefined {
    return this.loaded.get(threadId)?.view.turns[turnId] ?? this.store.readTurn(threadId, turnId);
  }

  /** The read model as stored, bypassing the in-memory copy: what the durable log folds to. */
  readStoredView(threadId: string): ThreadView | undefined {
    return this.store.readView(threadId);
  }

  readEvents(threadId: string, after: number, limit: number): StoredEvent[] {
    return this.store.readThreadEvents(threadId, after, limit);
  }

  /** Threads newest first, after position `before`, of one owner or all (see `ThreadStore.threadsNewestFirst`). */
  threadsNewestFirst(before: number | null, owner?: string | null): Iterable<ListedThread> {
    return this.store.threadsNewestFirst(before, owner);
  }

  /** What `thread.list` shows of a thread, without reading its turns. */
  summary(threadId: string): ThreadSummary | undefined {
    const view = this.loaded.get(threadId)?.view;
    return view ? summarize(view) : this.store.readSummary(threadId);
  }

  /** Threads with an open turn (requested, running or interrupting). */
  listOpenTurns(): Array<{ threadId: string; turnId: string }> {
    return this.store.openTurns();
  }

  /** Threads with a revert under way, as the store knows them. */
  listOpenReverts(): Array<{ threadId: string; revertId: string }> {
    return this.store.openReverts();
  }

  /**
   * Each open turn's row, a batch at a time with other work let in between:
   * what services read on start (after a crash, every open turn) must not
   * hold back the first answers.
   */
  async forEachOpenTurn(visit: (threadId: string, turn: TurnView) => void): Promise<void> {
    let visited = 0;
    for (const { threadId, turnId } of this.store.openTurns()) {
      if (this.closed) return;
      const turn = this.readTurn(threadId, turnId);
      if (turn) visit(threadId, turn);
      if (++visited % 5 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** State names of a loaded thread's live actors (undefined when passivated). */
  liveStates(threadId: string): Record<string, unknown> | undefined {
    return this.loaded.get(threadId)?.actors.states();
  }

  /** Whether the thread's actors are in memory (it was used lately). */
  isLoaded(threadId: string): boolean {
    return this.loaded.has(threadId);
  }

  get loadedThreadCount(): number {
    return this.loaded.size;
  }

  /** Stops a thread's actors; its state stays on disk and it reloads on next use. */
  passivate(threadId: string): boolean {
    if (this.queued.has(threadId) || !this.loaded.has(threadId)) return false;
    this.evict(threadId);
    return true;
  }

  private evict(threadId: string): void {
    this.loaded.get(threadId)?.actors.stop();
    this.loaded.delete(threadId);
  }

  private passivateIdle(): void {
    const cutoff = this.now() - this.idleMs;
    for (const [threadId, thread] of this.loaded) if (thread.lastUsed < cutoff) this.passivate(threadId);
  }

  /**
   * Marks the thread used now. `loaded` is kept in order of last use, least
   * recent first (a Map iterates in insertion order), so making room takes
   * threads from its front instead of sorting every loaded thread on every
   * command once the cap is reached.
   */
  private touch(threadId: string, thread: LoadedThread): void {
    thread.lastUsed = this.now();
    this.loaded.delete(threadId);
    this.loaded.set(threadId, thread);
  }

  private evictOverflow(): void {
    // A thread with commands queued stays (`passivate` refuses it): the next least recently used goes instead.
    for (const threadId of this.loaded.keys()) {
      if (this.loaded.size <= this.maxLoaded) break;
      this.passivate(threadId);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.allSettled([...this.locks.values()]);
    for (const threadId of [...this.loaded.keys()]) this.evict(threadId);
    await this.store.close();
  }
}
