/** Providers hand over arguments that did not parse as `{ invalidJson: text }`: the text, or `null` for arguments that parsed. */
export function unparsedArguments(input: unknown): string | null {
  if (typeof input !== 'object' || input === null) return null;
  const text = (input as { invalidJson?: unknown }).invalidJson;
  return Object.keys(input).length === 1 && typeof text === 'string' ? text : null;
}
