import { type ProviderErrorInfo, type ProviderMessage, type ProviderRequest, type ThreadView, TurnloomError } from '../../domain/index.ts';

/**
 * Extension hooks: code that embeds turnloom registers them on a worker
 * (`new Worker({ hooks })`, or `localWorker.hooks` of the server) and they
 * run inside each turn's step loop. Every decision that changes what the
 * model reads is recorded in the log first, so the request a step sends is
 * still the one the engine derives from its log. A hook that throws fails
 * its turn with a clear error; the worker goes on with its other turns.
 */
export interface HookContext {
  readonly threadId: string;
  readonly turnId: string;
  /** The step about to run (`preStep`, `request`), that failed (`requestError`) or that just answered (`turnStopping`). */
  readonly step: number;
  /** The thread as the worker's fold of the log has it now. */
  readonly view: ThreadView;
  readonly signal: AbortSignal;
  /**
   * Summarises older turns with a model call (recorded), so the model reads
   * the summary and the recent turns from this step on. Rejects with
   * `CompactionRefused` when the thread has compaction off, there is nothing
   * older to summarise, or the turn used up its compactions.
   */
  compact(reason: 'window' | 'overflow'): Promise<void>;
}

/** `reject`: the turn fails with the reason. `replace`: the step (and later ones) read these messages instead. */
export type PreStepDecision = { reject: string } | { replace: ProviderMessage[]; reason: string };

export type PreStepHook = (context: HookContext, messages: readonly ProviderMessage[]) => PreStepDecision | void | Promise<PreStepDecision | void>;
/** May change the model, the parameters or the tools of the call; a changed conversation is refused by the engine's digest check. */
export type RequestHook = (context: HookContext, request: ProviderRequest) => ProviderRequest | void | Promise<ProviderRequest | void>;
/** `retry`: the hook did something about the error (compacted, switched model) and the step should run again now. */
export type RequestErrorHook = (context: HookContext, error: ProviderErrorInfo, attempt: number) => 'retry' | void | Promise<'retry' | void>;
/** The model stopped asking for tools: a listener may steer input in, and the turn goes on while input waits. */
export type TurnStoppingHook = (context: HookContext & { steer(text: string): Promise<void> }) => void | Promise<void>;

export interface NamedHook<F> {
  /** What the log says decided (`hook:<name>` in activities). */
  name: string;
  run: F;
}

export interface TurnHooks {
  /** Waterfall, before each model call. */
  preStep?: Array<NamedHook<PreStepHook>>;
  /** Waterfall, on the request about to be sent. */
  request?: Array<NamedHook<RequestHook>>;
  /** Waterfall, when a model call failed; the first `retry` wins. */
  requestError?: Array<NamedHook<RequestErrorHook>>;
  /** Serial, when the model stopped; then the inbox decides. */
  turnStopping?: Array<NamedHook<TurnStoppingHook>>;
}

/** Several sets of hooks as one, each kind in the order given. */
export function combineHooks(...sets: Array<TurnHooks | undefined>): TurnHooks {
  const all = sets.filter((set): set is TurnHooks => set !== undefined);
  return {
    preStep: all.flatMap((set) => set.preStep ?? []),
    request: all.flatMap((set) => set.request ?? []),
    requestError: all.flatMap((set) => set.requestError ?? []),
    turnStopping: all.flatMap((set) => set.turnStopping ?? []),
  };
}

/** A hook threw: its turn fails with this, and nothing else does. */
export class HookFailed extends TurnloomError {
  constructor(kind: keyof TurnHooks, name: string, cause: unknown) {
    super('unavailable', `the ${kind} hook "${name}" failed: ${cause instanceof Error ? cause.message : String(cause)}`, { hook: name, kind });
    this.name = 'HookFailed';
  }
}

/** A `preStep` hook refused the turn. */
export class TurnRejected extends TurnloomError {
  constructor(name: string, reason: string) {
    super('conflict', `the preStep hook "${name}" rejected the turn: ${reason}`, { hook: name, reason });
    this.name = 'TurnRejected';
  }
}

/** Compaction cannot help: the turn fails with the reason (and the overflow that asked for it). */
export class CompactionRefused extends TurnloomError {
  constructor(reason: string) {
    super('unavailable', reason);
    this.name = 'CompactionRefused';
  }
}

/** Runs one hook, turning anything it throws (but a refused compaction, which says why on its own) into `HookFailed`. */
export async function runHook<R>(kind: keyof TurnHooks, hook: NamedHook<(...args: never[]) => R>, call: () => R | Promise<R>): Promise<R> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof CompactionRefused) throw error;
    throw new HookFailed(kind, hook.name, error);
  }
}
