import type { ThreadSummary } from '../../domain/index.ts';

/**
 * A thread's state in one word, for a list: `running` while a turn is open
 * (one a stopped run left open too: the next `run --continue` takes it up),
 * `reverting`, `error` when its provider session failed, else `idle`.
 */
export function threadState({ openTurnId, sessionState }: Pick<ThreadSummary, 'openTurnId' | 'sessionState'>): string {
  if (openTurnId !== null) return 'running';
  if (sessionState === 'reverting' || sessionState === 'error') return sessionState;
  return 'idle';
}
