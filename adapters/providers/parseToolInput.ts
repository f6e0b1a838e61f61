/**
 * A tool call's input from its streamed JSON text. Providers send nothing, or
 * an empty string, for a call without arguments: that is `{}`. Text that does
 * not parse is kept, not dropped, so the tool (and the log) can say what was wrong.
 */
export function parseToolInput(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return { invalidJson: text };
  }
}
