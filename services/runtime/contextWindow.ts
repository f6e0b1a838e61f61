import type { ProviderMessage, ThreadView } from '../../domain/index.ts';

/** Context windows of the models the providers list, in tokens, by the longest matching name prefix. */
const knownWindows: Array<[prefix: string, tokens: number]> = [
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-5', 400_000],
  ['o1', 200_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
  ['claude-', 200_000],
  ['deepseek-', 128_000],
];

/** The model's window: the override when given, the table's, or `null` (unknown: only a provider's overflow error triggers compaction). */
export function contextWindowOf(model: string | null, override: number | null): number | null {
  if (override !== null) return override;
  if (model === null) return null;
  const match = knownWindows.filter(([prefix]) => model.startsWith(prefix)).sort(([a], [b]) => b.length - a.length)[0];
  return match ? match[1] : null;
}

/** About four characters a token: rough, and only ever used to decide early. */
const tokensOf = (messages: readonly ProviderMessage[]): number => Math.ceil(JSON.stringify(messages).length / 4);

/**
 * Tokens the next request will take: the last call's usage (what it read and
 * wrote) plus what was added after its answer (tool results, input), or the
 * whole conversation's size when no call since the context last changed
 * reported usage.
 */
export function estimateTokens(view: ThreadView, messages: readonly ProviderMessage[]): number {
  const turn = view.openTurnId ? view.turns[view.openTurnId] : undefined;
  const last = turn?.steps.filter((step) => step.usage !== null).at(-1);
  const setBefore = view.context?.setBefore;
  const stale = setBefore !== undefined && setBefore.turnId === turn?.id && last !== undefined && setBefore.step > last.step;
  if (!last?.usage || stale) return tokensOf(messages);
  const answered = messages.findLastIndex((message) => message.role === 'assistant');
  return last.usage.input + last.usage.output + tokensOf(messages.slice(answered + 1));
}
