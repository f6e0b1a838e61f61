import { type ApprovalView, type PermissionMode, type ProviderChoice, TurnloomError, type TurnView, type Usage } from '../domain/index.ts';
import type { ApiCaller } from '../protocol/apiCaller.ts';
import type { StartOutcome } from '../protocol/apiResults.ts';
import { ThreadWatch } from '../protocol/threadWatch.ts';

/** What `startTurn` starts. */
export interface StartTurnOptions {
  /** The thread to run in; left out, a new thread is made (with `mode`, and `title` from the text). */
  threadId?: string;
  text: string;
  /** This turn's permission mode (for a new thread: the thread's). */
  mode?: PermissionMode;
  provider?: ProviderChoice;
  /**
   * Answers each approval the turn asks for, as it asks: `approve`, `always`
   * (approve, and allow that exact call in this thread from now on) or
   * `deny`. Left out, approvals wait for `answerApproval` (or any client).
   */
  onApproval?: (approval: ApprovalView) => ApprovalDecision | Promise<ApprovalDecision>;
}

export type ApprovalDecision = 'approve' | 'always' | 'deny';

/** A turn as it ended. */
export interface SettledTurn {
  threadId: string;
  turnId: string;
  state: 'completed' | 'failed' | 'interrupted';
  /** The answer's text, every text part joined. */
  text: string;
  /** Why it failed or was interrupted (the provider's words, a tool's, the interrupt's reason); `null` when it completed. */
  error: string | null;
  usage: Usage;
  /** The whole turn, as the thread's view has it. */
  turn: TurnView;
}

const settledStates = new Set(['completed', 'failed', 'interrupted']);

/**
 * One turn as a program follows it: its text as it is typed (`text()`, an
 * async iterator of pieces, ending when the turn ends), the turn each time
 * an event changes it (`changes()`), and `done`, which resolves with the settled turn — a failed
 * one too, with its reason; it rejects only when the turn cannot be
 * followed (the thread is gone, no access). `close()` stops following
 * without stopping the turn; everything the handle held is released once
 * `done` settles or it is closed.
 */
export class TurnHandle {
  readonly done: Promise<SettledTurn>;
  private readonly pieces: string[] = [];
  private readonly updates: TurnView[] = [];
  private readonly wakers = new Set<() => void>();
  private readonly answered = new Set<string>();
  private ended = false;
  private streamed = '';

  private constructor(
    private readonly api: ApiCaller,
    private readonly watch: ThreadWatch,
    readonly threadId: string,
    readonly turnId: string,
    /** Where `turn.start` put the input: a new turn, queued behind the open one, or steered into it. */
    readonly outcome: StartOutcome,
    private readonly options: StartTurnOptions,
  ) {
    this.done = new Promise<SettledTurn>((resolve, reject) => {
      const check = () => {
        const { status, error, view } = watch.context;
        if (status === 'failed') return finish(() => reject(new TurnloomError('unavailable', `could not follow turn ${turnId}: ${error}`)));
        const turn = view?.turns[turnId];
        if (turn) this.answerApprovals(turn);
        if (turn && settledStates.has(turn.state)) {
          const settled = this.settled(turn);
          finish(() => resolve(settled));
        }
      };
      const finish = (settle: () => void) => {
        subscription.unsubscribe();
        this.end();
        settle();
      };
      const subscription = watch.store.subscribe(check);
      check();
    });
    // Nobody has to await `done`: a turn that could not be followed is also what `close()` is for.
    this.done.catch(() => undefined);
  }

  /** Starts a turn (making a thread first when none is named) and follows it. */
  static async start(api: ApiCaller, options: StartTurnOptions): Promise<TurnHandle> {
    const threadId = options.threadId ?? (await api.call('thread.create', { title: options.text.slice(0, 80), ...(options.mode ? { mode: options.mode } : {}) })).threadId;
    // Followed before it starts, so not one event or delta of it is missed.
    const watch = new ThreadWatch(api, threadId);
    await watch.start();
    try {
      const started = await api.call('turn.start', { threadId, input: { text: options.text }, ...(options.mode ? { mode: options.mode } : {}), ...(options.provider ? { provider: options.provider } : {}) });
      const handle = new TurnHandle(api, watch, threadId, started.turnId, started, options);
      handle.follow();
      return handle;
    } catch (error) {
      watch.close();
      throw error;
    }
  }

  private follow(): void {
    const offLive = this.watch.onLive((delta) => {
      if (delta.turnId !== this.turnId || delta.kind !== 'text' || this.ended) return;
      this.streamed += delta.text;
      this.push(delta.text);
    });
    let last: TurnView | undefined;
    const offEvents = this.watch.store.subscribe(({ context }) => {
      const turn = context.view?.turns[this.turnId];
      if (!turn || turn === last) return;
      last = turn;
      this.updates.push(turn);
      this.wake();
    });
    this.stopFollowing = () => {
      offLive();
      offEvents.unsubscribe();
    };
  }

  private stopFollowing = (): void => undefined;

  /** The turn's text as it is typed; pieces lost on the live channel come at the end, from the log, so the pieces always add up to the answer. */
  async *text(): AsyncIterableIterator<string> {
    for (let index = 0; ; ) {
      while (index < this.pieces.length) yield this.pieces[index++]!;
      if (this.ended) return;
      await new Promise<void>((resolve) => this.wakers.add(resolve));
    }
  }

  /** The turn each time it changes (a part starts or ends, a tool runs, an approval is asked…), as the thread's events fold into it; ends with the settled turn. */
  async *changes(): AsyncIterableIterator<TurnView> {
    for (let index = 0; ; ) {
      while (index < this.updates.length) yield this.updates[index++]!;
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

  private settled(turn: TurnView): SettledTurn {
    const text = turn.messages[1].parts.map((part) => (part.kind === 'text' ? (part.text ?? '') : '')).join('');
    // What the live channel lost is given from the log, so the pieces add up to the answer.
    if (text.startsWith(this.streamed) && text.length > this.streamed.length) this.push(text.slice(this.streamed.length));
    const state = turn.state as SettledTurn['state'];
    return { threadId: this.threadId, turnId: this.turnId, state, text, error: state === 'completed' ? null : (turn.error ?? turn.interrupt?.reason ?? null), usage: turn.usage, turn };
  }

  private push(piece: string): void {
    this.pieces.push(piece);
    this.wake();
  }

  private wake(): void {
    for (const wake of this.wakers) wake();
    this.wakers.clear();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopFollowing();
    this.watch.close();
    this.wake();
  }
}
