import { createHash } from 'node:crypto';
import type { McpServerConfig, McpServersEntry, TurnloomConfig } from './configSchema.ts';

/** A problem with a key of one file, said as `path: message`. */
export class McpShapeProblem extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/** One `mcpServers` entry as a server of our own shape. */
export function fromMcpServersEntry(entry: McpServersEntry): McpServerConfig {
  const { type, command, args, env, cwd, url, headers, timeoutMs, enabled } = entry;
  const common = { ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(enabled !== undefined ? { enabled } : {}) };
  if (command !== undefined && (type ?? 'stdio') === 'stdio') return { command, ...(args ? { args } : {}), ...(env ? { env } : {}), ...(cwd ? { cwd } : {}), ...common };
  return { url: url!, ...(headers ? { headers } : {}), ...(type === 'sse' ? { transport: 'sse' as const } : {}), ...common };
}

/**
 * The file's servers all under `mcp`: those of `mcpServers` (the shape
 * other tools write) mapped onto ours. A name under both is refused,
 * rather than one silently winning.
 */
export function withMcpServers(config: TurnloomConfig): TurnloomConfig {
  const { mcpServers, ...rest } = config;
  if (mcpServers === undefined) return config;
  const mcp = { ...rest.mcp };
  for (const [name, entry] of Object.entries(mcpServers)) {
    if (Object.hasOwn(mcp, name)) throw new McpShapeProblem(`mcpServers.${name}`, `a server named "${name}" is under both "mcp" and "mcpServers"; keep one of them`);
    mcp[name] = fromMcpServersEntry(entry);
  }
  return { ...rest, mcp };
}

/** `value` as JSON with every object's keys sorted: the same spec always reads the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The SHA-256 of a server's spec as its file says it (before `${VAR}`s are expanded): what an allowance is bound to. */
export const mcpSpecDigest = (spec: McpServerConfig): string => createHash('sha256').update(canonical(spec)).digest('hex');
