import type { ThreadWatch } from '../../protocol/threadWatch.ts';
import { type Logger, type ProviderAdapter, type ProviderChoice, ProviderError, type SideTaskReport, type ThreadView, TurnloomError, errorFields, silentLogger } from '../../domain/index.ts';
import type { LeaseProof, SideWorkRequest } from '../dispatch/workerProtocol.ts';
import { type SideTask, sideWorkDue } from './sideWorkDue.ts';
import { sideLineOf, sideWorkRequest } from './sideWorkRequest.ts';
import { type Answer, collectAnswer } from './collectAnswer.ts';
import { unboundedController } from './unboundedController.ts';
import type { WorkerLink } from './workerLink.ts';

export interface SideWorkOptions {
  /** A side task's model call not answered in this long fails (its failure is recorded like any other). */
  timeoutMs: number;
  log?: Logger;
}

/** How long the worker's fold may take to show the turn's settling it wrote; past that, no side work for the turn. */
const FOLD_WAIT_MS = 5_000;

/** Settles with the promise, or rejects when the signal aborts: an adapter that ignores the abort cannot hold side work. */
function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    // Observed also when the signal wins, so its late rejection is nobody's crash.
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** How long an aborted provider call may take to wind down before side work stops waiting for it. */
const ABORT_GRACE_MS = 1_000;

/** Resolves once the promise settles, or after `ms`, whichever comes first. */
function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const settled = () => {
      clearTimeout(timer);
      resolve();
    };
    promise.then(settled, settled);
  });
}

/** Refusals the worker expects when the thread moved on (the turn gone, its report made already, the lease superseded): nothing to say. */
const expected = (error: unknown) => error instanceof TurnloomError && ['conflict', 'not_found', 'fenced'].includes(error.code);

/**
 * Side work on the worker that ran the turn: once a turn it ran has settled,
 * the title and summary that turn calls for (see `sideWorkDue`) are asked of
 * the turn's own provider and reported to the engine on `sideWork`, which
 * records and applies them. It runs apart from the turn and never holds it;
 * a failure is reported as such; `stop` aborts what runs and waits for it.
 */
export class SideWork {
  private readonly running = new Set<Promise<void>>();
  /** One listener per side task running, each removed when its task ends: as many as turns settle at once, not a leak. */
  private readonly closing = unboundedController();

  constructor(
    private readonly link: WorkerLink,
    private readonly adapterFor: (choice: ProviderChoice) => ProviderAdapter | undefined,
    private readonly options: SideWorkOptions,
  ) {}

  /**
   * After a turn this worker ran settled (its last write reached `settledSeq`):
   * waits, briefly, for the fold to show that, then starts what is due
   * without waiting for it.
   */
  async afterTurn(fold: ThreadWatch, settledSeq: number, proof: LeaseProof): Promise<void> {
    if (this.closing.signal.aborted) return;
    const view = await this.holding(fold, settledSeq);
    const provider = view?.turns[proof.turnId]?.provider;
    const adapter = provider && this.adapterFor(provider);
    if (!view || !provider || !adapter || this.closing.signal.aborted) return;
    for (const task of sideWorkDue(view, proof.turnId)) {
      const run = this.run(task, adapter, provider.model, proof).finally(() => this.running.delete(run));
      this.running.add(run);
    }
  }

  /** Resolves once no side work runs here, or once `withinMs` have passed (default: however long it takes). */
  async idle(withinMs?: number): Promise<void> {
    if (withinMs !== undefined) return settledWithin(this.idle(), withinMs);
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Aborts what runs, waits for it to end, and takes no more. */
  async stop(): Promise<void> {
    this.closing.abort();
    await this.idle();
  }

  /** The fold once it holds `seq`; `null` if it does not in time, stops, or the worker does. */
  private holding(fold: ThreadWatch, seq: number): Promise<ThreadView | null> {
    const signal = this.closing.signal;
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(null), FOLD_WAIT_MS);
      const onClose = () => finish(null);
      signal.addEventListener('abort', onClose, { once: true });
      const check = () => {
        const { seq: reached, view, status } = fold.context;
        if (reached >= seq) finish(view);
        else if (status === 'failed' || status === 'closed') finish(null);
      };
      const subscription = fold.store.subscribe(check);
      function finish(view: ThreadView | null) {
        clearTimeout(timer);
        signal.removeEventListener('abort', onClose);
        subscription.unsubscribe();
        resolve(view);
      }
      check();
    });
  }

  private async run(task: SideTask, adapter: ProviderAdapter, model: string | null, proof: LeaseProof): Promise<void> {
    try {
      const { kind, model: answeredBy, usage, outcome } = await this.ask(task, adapter, model);
      // Stopped midway: the worker is going away, and what it had is no answer.
      if (this.closing.signal.aborted) return;
      const request: SideWorkRequest = { ...proof, kind, model: answeredBy, usage, outcome };
      await this.link.persist('sideWork', request, this.closing.signal);
    } catch (error) {
      if (!expected(error) && !this.closing.signal.aborted) (this.options.log ?? silentLogger).warn({ ...errorFields(error), turnId: task.turnId, kind: task.kind }, 'side work was not recorded');
    }
  }

  /** One model call; never throws: a failure is the report's outcome. */
  private async ask(task: SideTask, adapter: ProviderAdapter, model: string | null): Promise<SideTaskReport> {
    const call = new AbortController();
    const onClose = () => call.abort(this.closing.signal.reason);
    this.closing.signal.addEventListener('abort', onClose, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      call.abort();
    }, this.options.timeoutMs);
    const answer: Answer = { text: '', model: null, usage: null };
    const report = (outcome: SideTaskReport['outcome']): SideTaskReport => ({ kind: task.kind, turnId: task.turnId, model: answer.model ?? model, usage: answer.usage, outcome });
    let collecting: Promise<void> = Promise.resolve();
    try {
      collecting = collectAnswer(adapter.stream(sideWorkRequest(task, model), call.signal), answer);
      await untilAborted(collecting, call.signal);
      const line = sideLineOf(task.kind, answer.text);
      return report(line === null ? { kind: 'failed', error: 'the model answered with no text' } : { kind: 'done', text: line });
    } catch (error) {
      const why = timedOut ? `no answer in ${this.options.timeoutMs} ms` : error instanceof ProviderError ? `${error.info.kind}: ${error.info.message}` : String((error as Error)?.message ?? error);
      return report({ kind: 'failed', error: why.slice(0, 2_000) || 'failed' });
    } finally {
      clearTimeout(timer);
      this.closing.signal.removeEventListener('abort', onClose);
      // An aborted call is let wind down, so nothing of it runs on after a stop; one that ignores the abort is left to itself.
      await settledWithin(collecting, ABORT_GRACE_MS);
    }
  }
}
