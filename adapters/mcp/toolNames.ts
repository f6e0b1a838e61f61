/** Providers take tool names of these characters only, and at most 64 of them. */
const maxToolNameChars = 64;

/** The name the model sees for `tool` of `server`: `<server>__<tool>`, other characters as `_`, cut to 64. */
export function offeredToolName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, maxToolNameChars);
}
