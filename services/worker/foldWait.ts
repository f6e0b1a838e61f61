import type { ThreadView } from '../../domain/index.ts';
import type { TurnWork } from './turnWork.ts';

/**
 * Waits until the worker's fold of the log shows what `read` looks for (a
 * decision, a child's outcome), and gives it; rejects with the turn's stop
 * reason as soon as the turn is stopped. Facts come from the log, never from
 * a callback, so what is waited for survives any process in between.
 */
export function whenFold<T>(work: TurnWork, read: (view: ThreadView | null) => T | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const check = () => {
      const found = read(work.fold.context.view);
      if (found !== undefined) finish(() => resolve(found));
    };
    const onAbort = () => finish(() => reject(work.signal.reason));
    const subscription = work.fold.store.subscribe(check);
    const waiting = waitersOf(work.signal);
    waiting.add(onAbort);
    function finish(outcome: () => void) {
      subscription.unsubscribe();
      waiting.delete(onAbort);
      outcome();
    }
    if (work.signal.aborted) onAbort();
    else check();
  });
}

/**
 * The waits of one turn's signal, behind one listener of its own: a turn
 * waits on as many facts at once as it runs calls at once (eight sub-agents
 * and their approvals), which one listener a wait would push past Node's
 * leak warning.
 */
const waiters = new WeakMap<AbortSignal, Set<() => void>>();

function waitersOf(signal: AbortSignal): Set<() => void> {
  let waiting = waiters.get(signal);
  if (!waiting) {
    const created = new Set<() => void>();
    waiting = created;
    waiters.set(signal, created);
    signal.addEventListener('abort', () => {
      for (const onAbort of [...created]) onAbort();
    }, { once: true });
  }
  return waiting;
}
