import type { ThreadSummary } from '../domain/index.ts';

/**
 * The thread of a data folder that ran last: not archived, not a
 * sub-agent's. What `run --continue` goes on with, and what `show` and
 * `undo` take when they name no thread.
 */
export function latestThread(summaries: Iterable<Pick<ThreadSummary, 'id' | 'updatedAt' | 'archived' | 'parentThreadId'>>): string | null {
  let last: { id: string; updatedAt: number } | null = null;
  for (const summary of summaries) {
    if (!summary.archived && !summary.parentThreadId && (last === null || summary.updatedAt > last.updatedAt)) last = summary;
  }
  return last?.id ?? null;
}
