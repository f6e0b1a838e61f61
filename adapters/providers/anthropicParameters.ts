/** The parameters an Anthropic call sends beside its request, as a request header records them; apart from the adapter, which loads the SDK. */
export function anthropicParameters(options: { maxTokens?: number; thinkingBudgetTokens?: number }): Record<string, number> {
  return { maxTokens: options.maxTokens ?? 8_192, ...(options.thinkingBudgetTokens ? { thinkingBudgetTokens: options.thinkingBudgetTokens } : {}) };
}
