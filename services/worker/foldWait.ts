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
    work.signal.addEventListener('abort', onAbort, { once: true });
    function finish(outcome: () => void) {
      subscription.unsubscribe();
      work.signal.removeEventListener('abort', onAbort);
      outcome();
    }
    if (work.signal.aborted) onAbort();
    else check();
  });
}
