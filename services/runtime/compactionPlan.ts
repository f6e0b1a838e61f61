import type { ProviderMessage, ThreadView } from '../../domain/index.ts';
import { deriveMessages } from './deriveRequest.ts';

export interface CompactionPlan {
  /** What the summary call reads: everything the model reads now before `keptFromTurnId`. */
  summarise: ProviderMessage[];
  /** The oldest turn that stays verbatim. */
  keptFromTurnId: string;
}

/**
 * Which turns a compaction summarises: every turn before the open one that
 * the model still reads verbatim, keeping the `keepRecentTurns` most recent
 * of them as they are (but always summarising at least one). `null`: there
 * is nothing older than the open turn to summarise.
 */
export function planCompaction(view: ThreadView, turnId: string, keepRecentTurns: number): CompactionPlan | null {
  const live = view.turnIds.filter((id) => view.turns[id]!.revertedAt === null);
  const current = live.indexOf(turnId);
  const start = view.context ? Math.max(0, live.indexOf(view.context.fromTurnId)) : 0;
  const older = current - start;
  if (current < 0 || older <= 0) return null;
  const keptFromTurnId = live[current - Math.min(keepRecentTurns, older - 1)]!;
  const summarise = deriveMessages({ ...view, turnIds: view.turnIds.slice(0, view.turnIds.indexOf(keptFromTurnId)) });
  return { summarise, keptFromTurnId };
}
