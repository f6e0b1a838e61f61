import type { ProviderAdapter, ProviderMessage, Usage } from '../../domain/index.ts';
import { planCompaction } from '../runtime/compactionPlan.ts';
import { contextWindowOf, estimateTokens } from '../runtime/contextWindow.ts';
import { type Answer, collectAnswer } from './collectAnswer.ts';
import { reachWritten } from './reachWritten.ts';
import type { CompactionOptions, TurnWork } from './turnWork.ts';
export type { CompactionOptions } from './turnWork.ts';
import { CompactionRefused, type TurnHooks } from './turnHooks.ts';

const SUMMARY_SYSTEM =
  'You compact the conversation of a coding agent so it can go on within its context window. Summarise the conversation above for the agent itself: the user’s goals and constraints, decisions made, files read and changed, commands run and their results, and what is still open. Be concise and factual; keep names, paths and numbers exact.';
const SUMMARY_ASK = 'Summarise the conversation so far, as instructed.';
const MAX_SUMMARY_CHARS = 40_000;

/**
 * Compaction as the first user of the hooks: before a step, when the
 * request would not fit the model's window (`preStep`), and when the
 * provider answers that it did not (`requestError`, then `retry`).
 */
export function compactionHooks(options: CompactionOptions): TurnHooks {
  return {
    preStep: [
      {
        name: 'compaction',
        run: async (context, messages) => {
          const window = contextWindowOf(context.view.turns[context.turnId]!.provider.model, options.contextWindow);
          if (window === null || context.view.compaction === 'off' || estimateTokens(context.view, messages) <= window) return;
          await context.compact('window');
        },
      },
    ],
    requestError: [
      {
        name: 'compaction',
        run: async (context, error) => {
          if (error.kind !== 'contextOverflow') return;
          await context.compact('overflow');
          return 'retry';
        },
      },
    ],
  };
}

/**
 * One compaction, recorded: `compaction.started` (the session is
 * `compacting`), the summary call, then `context.compacted` with the
 * summary and its usage, or `compaction.failed`. Refused (nothing recorded)
 * when the thread has compaction off, the turn used up its compactions, or
 * there is nothing older than this turn to summarise.
 */
export async function compactContext(work: TurnWork, adapter: ProviderAdapter, step: number, reason: 'window' | 'overflow', options: CompactionOptions): Promise<void> {
  const view = work.fold.context.view!;
  const turn = view.turns[work.turnId]!;
  const overflow = reason === 'overflow' ? 'the context window overflowed' : 'the next request would not fit the context window';
  if (view.compaction === 'off') throw new CompactionRefused(`${overflow}, and compaction is off for this thread`);
  if (turn.compactions >= options.maxPerTurn) throw new CompactionRefused(`${overflow} after ${turn.compactions} compactions, the most one turn may make`);
  const plan = planCompaction(view, work.turnId, options.keepRecentTurns);
  if (!plan) throw new CompactionRefused(`${overflow}, and there is nothing older than this turn to compact`);
  await work.outbox.record([{ type: 'compaction.started', turnId: work.turnId, step, reason }]);
  try {
    const { summary, usage } = await summarise(adapter, turn.provider.model, plan.summarise, work.signal);
    await work.outbox.record([{ type: 'context.compacted', turnId: work.turnId, step, summary, keptFromTurnId: plan.keptFromTurnId, usage }]);
  } catch (error) {
    await work.outbox.record([{ type: 'compaction.failed', turnId: work.turnId, reason: (error as Error).message }]).catch(() => undefined);
    throw error;
  }
  await reachWritten(work);
}

async function summarise(adapter: ProviderAdapter, model: string | null, messages: ProviderMessage[], signal: AbortSignal): Promise<{ summary: string; usage: Usage | null }> {
  const answer: Answer = { text: '', model: null, usage: null };
  await collectAnswer(adapter.stream({ model, system: SUMMARY_SYSTEM, messages: [...messages, { role: 'user', text: SUMMARY_ASK }], tools: [] }, signal), answer);
  if (answer.text.trim() === '') throw new Error('the summary call answered with no text');
  return { summary: answer.text.slice(0, MAX_SUMMARY_CHARS), usage: answer.usage };
}
