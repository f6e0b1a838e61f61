import { type ApprovalView, type PermissionMode, type ProviderChoice, TurnloomError, type TurnView } from '../domain/index.ts';
import type { ApiCaller } from '../protocol/apiCaller.ts';
import type { StartOutcome } from '../protocol/apiResults.ts';
import { ThreadWatch } from '../protocol/threadWatch.ts';
import { type SettledTurn, TEXT_PART_SEPARATOR, type TurnEvent, TurnEventFeed } from './turnEvents.ts';

export type { SettledTurn };

/** What `startTurn` starts. */
export interface StartTurnOptions {
  /** The thread to run in; left out, a new thread is made (with `mode`, and `title` from the text). */
  threadId?: string;
  text: string;
  /** This turn's permission mode (for a new thread: the thread's). */
  mode?: PermissionMode;
  provider?: ProviderChoice;
  /** The agent it runs as (`build`, `plan`, or one the worker defines), instead of the thread's (for a new thread: the thread's). */
  agent?: string;
  /** When the thread already has an open turn: `queue` behind it (the default), `steer` the text into it, or `interrupt` it and start after it. */
  whileRunning?: 'queue' | 'steer' | 'interrupt';
  /**
   * Aborting it interrupts the turn (its reason, when a string or an
   * `Error`, is the interrupt's); `done` then resolves `interrupted`. Already
   * aborted, or aborted before the turn is started, `startTurn` rejects with
   * its reason and starts nothing.
   */
  signal?: AbortSignal;
  /**
   * Answers each approval the turn asks for, as it asks: `approve`, `always`
   * (approve, and allow that exact call in this thread from now on) or
   * `deny`. Left out, approvals wait for `answerApproval` (or any client).
   */
  onApproval?: (approval: ApprovalView) => ApprovalDecision | Promise<ApprovalDecision>;
}

export type ApprovalDecision = 'approve' | 'always' | 'deny';

/**
 * One turn as a program follows it: what happens in it (`events()`, an
 * async iterator of typed `TurnEvent`s, ending with `turn.settled`), its
 * text as it is typed (`text()`, pieces that add up to the answer, a blank
 * line between two steps' words), the turn each time an event changes it
 * (`changes()`), and `done`, which resolves with the settled turn — a failed
 * one too, with its reason; it rejects only when the turn cannot be
 * followed (the thread is gone, no access). Each iterator starts from the
 * turn's beginning, however late it is called. `close()` stops following
 * without stopping the turn; everything the handle held is released once
 * `done` settles or it is closed.
 */
export class TurnHandle {
  readonly done: Promise<SettledTurn>;
  private readonly events_: TurnEvent[] = [];
  private readonly pieces: string[] = [];
  private readonly updates: TurnView[] = [];
  private readonly wakers = new Set<() => void>();
  private readonly answered = new Set<string>();
  private readonly feed: TurnEventFeed;
  private lastTextPart: string | null = null;
  private ended = false;

  private constructor(
    private readonly api: ApiCaller,
    private readonly watch: ThreadWatch,
    readonly threadId: string,
    readonly turnId: string,
    /** Where `turn.start` put the input: a new turn, queued behind the open one, or steered into it. */
    readonly outcome: StartOutcome,
    private readonly options: StartTurnOptions,
  ) {
    this.feed = new TurnEventFeed(threadId, turnId);
    let settle!: { resolve: (turn: SettledTurn) => void; reject: (error: unknown) => void };
    this.done = new Promise<SettledTurn>((resolve, reject) => (settle = { resolve, reject }));
    this.settle = settle;
    // Nobody has to await `done`: a turn that could not be followed is also what `close()` is for.
    this.done.catch(() => undefined);
  }

  private readonly settle: { resolve: (turn: SettledTurn) => void; reject: (error: unknown) => void };

  /** Starts a turn (making a thread first when none is named) and follows it. */
  static async start(api: ApiCaller, options: StartTurnOptions): Promise<TurnHandle> {
    const { signal } = options;
    signal?.throwIfAborted();
    const threadId =
      options.threadId ?? (await api.call('thread.create', { title: options.text.slice(0, 80), ...(options.mode ? { mode: options.mode } : {}), ...(options.agent ? { agent: options.agent } : {}) })).threadId;
    // Followed before it starts, so not one event or delta of it is missed.
    const watch = new ThreadWatch(api, threadId);
    await watch.start();
    try {
      signal?.throwIfAborted();
      const started = await api.call('turn.start', {
        threadId,
        input: { text: options.text },
        ...(options.mode ? { mode: options.mode } : {}),
        ...(options.provider ? { provider: options.provider } : {}),
        ...(options.agent ? { agent: options.agent } : {}),
        ...(options.whileRunning ? { whileRunning: options.whileRunning } : {}),
      });
      const handle = new TurnHandle(api, watch, threadId, started.turnId, started, options);
      handle.follow();
      if (signal) handle.interruptOnAbort(signal);
      return handle;
    } catch (error) {
      watch.close();
      throw error;
    }
  }

  /** One listener for the thread's view (events, changes, approvals, the end) and one for its live deltas. */
  private follow(): void {
    const offLive = this.watch.onLive((delta) => {
      if (!this.ended) this.take(this.feed.live(delta));
    });
    let last: TurnView | undefined;
    const check = () => {
      if (this.ended) return;
      const { status, error, view } = this.watch.context;
      if (status === 'failed') {
        this.end();
        return this.settle.reject(new TurnloomError('unavailable', `could not follow turn ${this.turnId}: ${error}`));
      }
      const turn = view?.turns[this.turnId];
      if (!turn || turn === last) return;
      last = turn;
      this.updates.push(turn);
      this.answerApprovals(turn);
      // The last of its events (the text the live channel lost among them) comes before `done`.
      const settled = this.take(this.feed.next(turn));
      if (settled) {
        this.end();
        this.settle.resolve(settled);
      }
    };
    const offEvents = this.watch.store.subscribe(check);
    this.stopFollowing = () => {
      offLive();
      offEvents.unsubscribe();
    };
    check();
  }

  private stopFollowing = (): void => undefined;
  private stopListening = (): void => undefined;

  /** Aborting `signal` interrupts the turn: at once when it is open, else as soon as it opens (it was queued). */
  private interruptOnAbort(signal: AbortSignal): void {
    let sent = false;
    const send = () => {
      if (sent || this.ended || !this.watch.context.view?.turns[this.turnId]) return;
      sent = true;
      const { reason } = signal;
      const said = typeof reason === 'string' ? reason : reason instanceof Error && reason.name !== 'AbortError' ? reason.message : 'aborted';
      // Settled meanwhile, or the engine is away: `done` says how the turn ended either way.
      this.interrupt(said.slice(0, 1_000) || 'aborted').catch(() => undefined);
    };
    let opened: { unsubscribe(): void } | undefined;
    const onAbort = () => {
      send();
      if (!sent) opened = this.watch.store.subscribe(send);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.stopListening = () => {
      signal.removeEventListener('abort', onAbort);
      opened?.unsubscribe();
    };
    if (signal.aborted) onAbort();
  }

  /**
   * What happens in the turn, as it happens, from its start: steps, text and
   * reasoning as they are typed, tool calls and their results, approvals,
   * sub-agents, usage; the last is `turn.settled` (see `TurnEvent`).
   */
  events(): AsyncIterableIterator<TurnEvent> {
    return this.iterate(this.events_);
  }

  /**
   * The turn's text as it is typed, a blank line between two steps' words;
   * what the live channel lost comes from the log, so the pieces always add
   * up to the settled turn's `text`.
   */
  text(): AsyncIterableIterator<string> {
    return this.iterate(this.pieces);
  }

  /** The turn each time it changes (a part starts or ends, a tool runs, an approval is asked…), as the thread's events fold into it; ends with the settled turn. */
  changes(): AsyncIterableIterator<TurnView> {
    return this.iterate(this.updates);
  }

  private async *iterate<T>(items: readonly T[]): AsyncIterableIterator<T> {
    for (let index = 0; ; ) {
      while (index < items.length) yield items[index++]!;
      if (this.ended) return;
      await new Promise<void>((resolve) => this.wakers.add(resolve));
    }
  }

  /** Answers an approval of this thread (any client may; this one is at hand). */
  answerApproval(approvalId: string, decision: ApprovalDecision, note?: string): Promise<unknown> {
    this.answered.add(approvalId);
    return this.api.call('approval.respond', { threadId: this.threadId, approvalId, decision: decision === 'approve' ? 'once' : decision, ...(note === undefined ? {} : { note }) });
  }

  /** Asks the turn to stop; `done` resolves once it did (state `interrupted`). */
  interrupt(reason?: string): Promise<unknown> {
    return this.api.call('turn.interrupt', { threadId: this.threadId, turnId: this.turnId, ...(reason === undefined ? {} : { reason }) });
  }

  /** Stops following the turn (it goes on); `done` stays pending if it had not settled. */
  close(): void {
    this.end();
  }

  private answerApprovals(turn: TurnView): void {
    const answer = this.options.onApproval;
    if (!answer) return;
    for (const approval of turn.approvals) {
      if (approval.state !== 'pending' || this.answered.has(approval.id)) continue;
      this.answered.add(approval.id);
      void Promise.resolve()
        .then(() => answer(approval))
        .then((decision) => this.answerApproval(approval.id, decision))
        // Answered meanwhile by someone else, or the turn moved on: nothing to do.
        .catch(() => undefined);
    }
  }

  /** Keeps what the feed gave (and the text pieces among it) for the iterators; returns the settled turn when it came. */
  private take(events: TurnEvent[]): SettledTurn | undefined {
    let settled: SettledTurn | undefined;
    for (const event of events) {
      this.events_.push(event);
      if (event.type === 'turn.settled') settled = event.turn;
      if (event.type !== 'text.delta') continue;
      if (this.lastTextPart !== null && this.lastTextPart !== event.partId) this.pieces.push(TEXT_PART_SEPARATOR);
      this.lastTextPart = event.partId;
      this.pieces.push(event.text);
    }
    if (events.length > 0) this.wake();
    return settled;
  }

  private wake(): void {
    for (const wake of this.wakers) wake();
    this.wakers.clear();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopFollowing();
    this.stopListening();
    this.watch.close();
    this.wake();
  }
}
