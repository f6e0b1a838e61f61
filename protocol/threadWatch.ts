import { createStore } from '@xstate/store';
import { type BusMessage, type BusStatus, type BusSubscription, type Logger, type StoredEvent, type ThreadView, type TurnView, TurnloomError, errorFields, silentLogger } from '../domain/index.ts';
import { decode } from '../bus/index.ts';
import { emptyThreadView, project, projectInto } from './projector.ts';
import { MAX_CATCH_UP, WATCH_KIND_HEADER } from './apiResults.ts';
import { decodeLiveBatch } from './liveBatch.ts';
import type { LiveDelta } from './liveBatch.ts';
import type { ApiCaller } from './apiCaller.ts';

export interface ThreadWatchContext {
  /** The thread's head with its newest turns (see `thread.get`); older ones come with `loadOlderTurns`. */
  view: ThreadView | null;
  /** Where older turns continue (`null`: the view holds the thread from its first turn). */
  olderCursor: string | null;
  /** Per-thread sequence of the last event folded in. */
  seq: number;
  /** `failed`: an error that retrying cannot fix (no access, the thread is gone, an event that will not fold). */
  status: 'loading' | 'live' | 'catchingUp' | 'failed' | 'closed';
  error: string | null;
  /** How often a whole snapshot was loaded (once at start, again past a 1,000-event gap). */
  snapshots: number;
  /** Events received twice (live and through catch-up) and dropped by sequence. */
  duplicates: number;
}

export interface ThreadWatchOptions {
  /** Also ask the log for anything new this often, in case the last event of a burst was lost (default 10 s). */
  pollMs?: number;
  /**
   * How events arrive. `api` (default): `thread.watch` delivers them to this
   * connection's own inbox after the server checked the token, which works
   * for clients that may not subscribe to raw event subjects. `subjects`:
   * subscribe to `<p>.v1.evt.<thread>` and the thread's live subjects
   * directly (trusted processes, one hop less; live deltas are taken only
   * from the channel of the open turn's lease, as this view has it).
   */
  via?: 'api' | 'subjects';
  /** Where a listener that threw or a garbled message is reported (default: nowhere). */
  log?: Logger;
  /**
   * A view of the whole thread (from its first turn) that this caller folded
   * before, such as a worker's of the thread's previous turn. The watch
   * folds the log on from its sequence instead of loading the thread's head
   * and older turns again; where the log does not continue it (it ends
   * before the view's sequence) or is more than 1,000 events past it, the
   * view is not used and the watch loads the thread as without it.
   */
  from?: ThreadView;
}

type LiveListener = (delta: LiveDelta) => void;

/**
 * The turns a view holds before `turnId`, oldest first: when a fresh window
 * starts at that turn, these are closed, and closed turns never change, so a
 * client keeps them. None when the view does not hold `turnId` (a gap).
 */
function turnsBefore(view: ThreadView, turnId: string | undefined): TurnView[] {
  const index = turnId === undefined ? -1 : view.turnIds.indexOf(turnId);
  return view.turnIds.slice(0, Math.max(0, index)).map((id) => view.turns[id]!);
}

/** The view with `older` (oldest first, all before its own turns) in front. */
function withOlderTurns(view: ThreadView, older: TurnView[]): ThreadView {
  if (older.length === 0) return view;
  return { ...view, turnIds: [...older.map((turn) => turn.id), ...view.turnIds], turns: { ...Object.fromEntries(older.map((turn) => [turn.id, turn])), ...view.turns } };
}

const createWatchStore = () =>
  createStore({
    context: { view: null, olderCursor: null, seq: 0, status: 'loading', error: null, snapshots: 0, duplicates: 0 } as ThreadWatchContext,
    on: {
      snapshotLoaded: (context, { view, olderCursor }: { view: ThreadView; olderCursor: string | null }) => {
        const kept = context.view ? turnsBefore(context.view, view.turnIds[0]) : [];
        return {
          ...context,
          view: withOlderTurns(view, kept),
          olderCursor: kept.length > 0 ? context.olderCursor : olderCursor,
          seq: view.seq,
          snapshots: context.snapshots + 1,
        };
      },
      olderTurnsLoaded: (context, { turns, olderCursor }: { turns: TurnView[]; olderCursor: string | null }) => ({
        ...context,
        olderCursor,
        view: withOlderTurns(context.view!, turns.filter((turn) => !context.view!.turns[turn.id]).reverse()),
      }),
      seeded: (context, { view }: { view: ThreadView }) => ({ ...context, view, olderCursor: null, seq: view.seq }),
      eventApplied: (context, { event }: { event: StoredEvent }) => ({ ...context, view: project(context.view!, event), seq: event.threadSeq }),
      duplicateDropped: (context) => ({ ...context, duplicates: context.duplicates + 1 }),
      statusChanged: (context, { status }: { status: ThreadWatchContext['status'] }) => ({ ...context, status }),
      failed: (context, { error }: { error: string }) => ({ ...context, status: 'failed' as const, error }),
    },
  });

type Work = { kind: 'event'; event: StoredEvent } | { kind: 'catchUp' };

/** Errors the bus or a busy server may stop giving; anything else will not go away by asking again. */
const transient = (error: unknown) => error instanceof TurnloomError && error.code === 'unavailable';

/**
 * A client's cache of one thread, kept in an `@xstate/store` store and
 * folded with the engine's own projector. It subscribes first, then loads
 * the snapshot and its sequence (or folds the whole log when the snapshot is
 * too large to send), applies events in sequence order, fills a gap of up to
 * 1,000 events through `thread.events` (past that it reloads the snapshot),
 * drops duplicates by sequence, catches up after a reconnect and, now and
 * then, in case the last event of a burst was lost. An error that retrying
 * cannot fix stops it with status `failed`, never silently.
 */
export class ThreadWatch {
  readonly threadId: string;
  readonly store = createWatchStore();
  private readonly client: ApiCaller;
  private readonly pollMs: number;
  private readonly pending: Work[] = [];
  private pumping: Promise<void> | null = null;
  private ready = false;
  private subscription: BusSubscription | undefined;
  private unwatchStatus: (() => void) | undefined;
  private poller: NodeJS.Timeout | undefined;
  private lastStatus: BusStatus = 'connected';
  private readonly via: 'api' | 'subjects';
  private readonly log: Logger;
  private readonly from: ThreadView | undefined;
  private readonly liveListeners = new Set<LiveListener>();
  private liveSubscription: BusSubscription | undefined;
  private watchId: string | undefined;
  private inbox = '';
  private renewer: NodeJS.Timeout | undefined;

  constructor(client: ApiCaller, threadId: string, options: ThreadWatchOptions = {}) {
    this.client = client;
    this.threadId = threadId;
    this.pollMs = options.pollMs ?? 10_000;
    this.via = options.via ?? 'api';
    this.log = options.log ?? silentLogger;
    this.from = options.from;
  }

  get context(): ThreadWatchContext {
    return this.store.getSnapshot().context;
  }

  private get stopped(): boolean {
    return this.context.status === 'closed' || this.context.status === 'failed';
  }

  async start(): Promise<void> {
    const { bus, subjects } = this.client;
    // The subscription must be in place before the snapshot is read, or events between the two would be lost.
    if (this.via === 'api') {
      this.inbox = bus.inbox();
      this.subscription = bus.subscribe(this.inbox, (message) => (message.headers[WATCH_KIND_HEADER] === 'live' ? this.hearLive(message) : this.receive(message)));
      await bus.flush();
      await this.renew();
    } else {
      this.subscription = bus.subscribe(subjects.events(this.threadId), (message) => this.receive(message));
      await bus.flush();
    }
    this.unwatchStatus = bus.onStatus((status) => {
      if (status === 'connected' && this.lastStatus !== 'connected') {
        if (this.via === 'api') this.renewSoon();
        this.enqueue({ kind: 'catchUp' });
      }
      this.lastStatus = status;
    });
    if (this.from) await this.foldOnFrom(this.from);
    else await this.loadSnapshot();
    this.ready = true;
    this.store.trigger.statusChanged({ status: 'live' });
    this.poller = setInterval(() => {
      if (this.pending.length === 0 && !this.pumping) this.enqueue({ kind: 'catchUp' });
    }, this.pollMs);
    this.poller.unref();
    this.pump();
  }

  /**
   * Starts or renews the server-side watch. A renewal that finds it gone
   * (the server restarted, or it lapsed) starts it again, and whatever was
   * published meanwhile is caught up from the log.
   */
  private async renew(): Promise<void> {
    const answer = await this.client.call('thread.watch', { threadId: this.threadId, deliverTo: this.inbox, ...(this.watchId ? { watchId: this.watchId } : {}) });
    const renewal = this.watchId !== undefined;
    this.watchId = answer.watchId;
    if (renewal && answer.created) this.enqueue({ kind: 'catchUp' });
    clearTimeout(this.renewer);
    this.renewer = setTimeout(() => this.renewSoon(), Math.max(100, answer.expiresInMs / 3));
    this.renewer.unref();
  }

  private renewSoon(): void {
    if (this.stopped) return;
    this.renew().catch((error: unknown) => {
      if (!transient(error)) return this.fail(error);
      clearTimeout(this.renewer);
      this.renewer = setTimeout(() => this.renewSoon(), 1_000);
      this.renewer.unref();
    });
  }

  /** Hears the thread's live deltas (the typing effect; never stored, may be lost); returns how to stop. */
  onLive(listener: LiveListener): () => void {
    this.liveListeners.add(listener);
    if (this.via === 'subjects' && !this.liveSubscription) {
      const { bus, subjects } = this.client;
      this.liveSubscription = bus.subscribe(subjects.liveOf(this.threadId), (message) => {
        // Only the open turn's lease holder knows the subject its deltas come on; whatever else names this thread is dropped.
        const view = this.context.view;
        const lease = view?.openTurnId ? view.turns[view.openTurnId]?.lease : null;
        if (lease && message.subject === subjects.live(view!.environment, this.threadId, lease.keyHash)) this.hearLive(message);
      });
    }
    return () => this.liveListeners.delete(listener);
  }

  private hearLive(message: BusMessage): void {
    let deltas: LiveDelta[];
    try {
      deltas = decodeLiveBatch(message.data);
    } catch {
      return; // A garbled batch is a lost one; the durable text comes with the events.
    }
    for (const delta of deltas) {
      for (const listener of this.liveListeners) {
        try {
          listener(delta);
        } catch (error) {
          // One listener's mistake must not cost the others (or the rest of the batch) their deltas.
          this.log.warn(errorFields(error), 'a live listener threw');
        }
      }
    }
  }

  private receive(message: BusMessage): void {
    try {
      this.enqueue({ kind: 'event', event: decode(message.data, 'application/msgpack') as StoredEvent });
    } catch (error) {
      // A garbled message is as good as a lost one: catch up from the log.
      this.log.warn({ ...errorFields(error), subject: message.subject }, 'an event that does not decode: catching up from the log');
      this.enqueue({ kind: 'catchUp' });
    }
  }

  private enqueue(work: Work): void {
    if (this.stopped) return;
    this.pending.push(work);
    this.pump();
  }

  private pump(): void {
    if (this.pumping || !this.ready || this.stopped) return;
    this.pumping = this.drain()
      .catch((error: unknown) => this.fail(error))
      .finally(() => {
        this.pumping = null;
        if (this.pending.length > 0) this.pump();
      });
  }

  private fail(error: unknown): void {
    this.pending.length = 0;
    clearInterval(this.poller);
    clearTimeout(this.renewer);
    this.store.trigger.failed({ error: error instanceof Error ? error.message : String(error) });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0 && !this.stopped) {
      const work = this.pending.shift()!;
      if (work.kind === 'catchUp') {
        await this.catchUp();
        continue;
      }
      const { event } = work;
      // Far behind, a fresh window is cheaper than paging the gap.
      if (event.threadSeq > this.context.seq + MAX_CATCH_UP) await this.loadSnapshot();
      if (event.threadSeq > this.context.seq + 1) await this.catchUp();
      this.apply(event);
    }
  }

  private apply(event: StoredEvent): void {
    if (event.threadSeq <= this.context.seq) this.store.trigger.duplicateDropped();
    else if (event.threadSeq === this.context.seq + 1) this.store.trigger.eventApplied({ event });
    // A later event after a failed catch-up stays unapplied; the next catch-up brings it.
  }

  private async loadSnapshot(): Promise<void> {
    let window: { thread: ThreadView; olderCursor: string | null };
    try {
      window = await this.client.call('thread.get', { threadId: this.threadId });
    } catch (error) {
      // Too large to send in one answer (an open turn over the limit): the log, folded here, is the same view.
      if (!(error instanceof TurnloomError && error.code === 'unavailable' && typeof error.details.size === 'number')) throw error;
      window = { thread: await this.foldWholeLog(), olderCursor: null };
    }
    if (window.thread.seq >= this.context.seq) this.store.trigger.snapshotLoaded({ view: window.thread, olderCursor: window.olderCursor });
  }

  /** Starts from a view of the whole thread folded before, and folds the log on from it (see `ThreadWatchOptions.from`). */
  private async foldOnFrom(view: ThreadView): Promise<void> {
    const page = await this.client.call('thread.events', { threadId: this.threadId, after: view.seq });
    if (page.lastSeq < view.seq || page.lastSeq - view.seq > MAX_CATCH_UP) return this.loadSnapshot();
    this.store.trigger.seeded({ view });
    for (const event of page.events) this.apply(event);
    if (this.context.seq < page.lastSeq) await this.catchUp();
  }

  /** Brings the next page of older turns into the view; resolves with how many came (0 at the first turn). */
  async loadOlderTurns(): Promise<number> {
    const before = this.context.olderCursor;
    if (before === null || this.context.view === null) return 0;
    const page = await this.client.call('thread.turns', { threadId: this.threadId, before });
    this.store.trigger.olderTurnsLoaded(page);
    return page.turns.length;
  }

  private async foldWholeLog(): Promise<ThreadView> {
    let view: ThreadView | null = null;
    for (let after = 0; ; ) {
      const page = await this.client.call('thread.events', { threadId: this.threadId, after });
      if (page.events.length === 0) return view ?? emptyThreadView(this.threadId, 0);
      for (const event of page.events) view = projectInto(view ?? emptyThreadView(this.threadId, event.at), event);
      after = page.events.at(-1)!.threadSeq;
      if (after >= page.lastSeq) return view!;
    }
  }

  /** Reads the log past our sequence until we hold everything the server has; waits out a server that is away. */
  private async catchUp(): Promise<void> {
    this.store.trigger.statusChanged({ status: 'catchingUp' });
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        for (;;) {
          const page = await this.client.call('thread.events', { threadId: this.threadId, after: this.context.seq });
          const before = this.context.seq;
          if (page.lastSeq - before > MAX_CATCH_UP) {
            await this.loadSnapshot();
            // A window could be served: go on from it. If not, the log is all there is, page by page.
            if (this.context.seq > before) continue;
          }
          for (const event of page.events) this.apply(event);
          if (page.events.length === 0 || this.context.seq >= page.lastSeq) break;
        }
        this.store.trigger.statusChanged({ status: 'live' });
        return;
      } catch (error) {
        if (!transient(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }

  /**
   * Resolves once the view holds sequence `seq` (an event this client knows
   * was committed, such as its own write): events on their way are waited
   * for briefly, then the log is asked.
   */
  async reach(seq: number): Promise<void> {
    while (this.context.seq < seq) {
      if (this.stopped) throw new TurnloomError('unavailable', `the watch of thread ${this.threadId} stopped at ${this.context.seq}, before ${seq}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, 200);
        const subscription = this.store.subscribe(({ context }) => {
          if (context.seq >= seq || context.status === 'closed' || context.status === 'failed') finish();
        });
        function finish() {
          clearTimeout(timer);
          subscription.unsubscribe();
          resolve();
        }
      });
      if (this.context.seq < seq && this.pending.length === 0) this.enqueue({ kind: 'catchUp' });
    }
  }

  /** Resolves once every queued event and catch-up has been handled. */
  async settled(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.liveSubscription?.unsubscribe();
    this.unwatchStatus?.();
    clearInterval(this.poller);
    clearTimeout(this.renewer);
    this.liveListeners.clear();
    this.store.trigger.statusChanged({ status: 'closed' });
    // The server drops a lapsed watch by itself; telling it is only courtesy, so a failure here is no one's concern.
    try {
      if (this.watchId) this.client.notify('thread.unwatch', { watchId: this.watchId });
    } catch {
      // A bus already closed: the watch lapses on the server by itself.
    }
  }
}
