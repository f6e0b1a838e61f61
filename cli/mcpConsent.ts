import { type LoadedConfig, MissingVariable, type McpServerConfig, type OfferedMcpServer, type TurnloomConfig, expandVariables } from '../services/config/index.ts';
import { registerSecret } from './redact.ts';
import { visible } from './terminalText.ts';
import { editUserFile } from './userConfigFile.ts';

/** A spec in one line, as its file says it (`${VAR}`s unexpanded): what the person allows. */
export function specSummary(spec: McpServerConfig): string {
  const pairs = (values: Record<string, string> | undefined, joiner: string) => Object.entries(values ?? {}).map(([key, value]) => `${key}${joiner}${value}`).join(', ');
  const text =
    'command' in spec
      ? `${[spec.command, ...(spec.args ?? [])].join(' ')}${spec.env ? ` (env: ${pairs(spec.env, '=')})` : ''}`
      : `${spec.url}${'transport' in spec && spec.transport === 'sse' ? ' (sse)' : ''}${spec.headers ? ` (headers: ${pairs(spec.headers, ': ')})` : ''}`;
  return visible(text.length > 300 ? `${text.slice(0, 299)}…` : text);
}

/** Whether the person allowed this server with this very spec. */
export const isAllowed = (config: TurnloomConfig, server: OfferedMcpServer): boolean => config.mcpAllowed?.[server.name] === server.digest;

/** Remembers in the user file that the person allowed `server`'s spec. */
export const allowServer = (server: OfferedMcpServer): string => editUserFile(['mcpAllowed', server.name], server.digest);

/** Asks the person about one server; `true` to start it (and remember so). */
export type ServerQuestion = (server: OfferedMcpServer, changed: boolean) => Promise<boolean>;

/**
 * The configuration with the project's servers the person allowed added
 * to its `mcp`, and one line for each one left out, saying why and how to
 * allow it. A server not allowed yet is asked about when there is someone
 * to ask (a terminal), and skipped when there is not.
 */
export async function withProjectServers(loaded: LoadedConfig, ask: ServerQuestion | null, env: NodeJS.ProcessEnv = process.env): Promise<{ config: TurnloomConfig; notes: string[] }> {
  const notes: string[] = [];
  const mcp: Record<string, McpServerConfig> = { ...loaded.config.mcp };
  for (const server of loaded.offered) {
    const from = `mcp ${server.name} (${server.file})`;
    if (server.refused !== null) {
      notes.push(`${from}: not started: ${server.refused}`);
      continue;
    }
    if (server.spec.enabled === false) continue;
    const changed = loaded.config.mcpAllowed?.[server.name] !== undefined;
    if (!isAllowed(loaded.config, server)) {
      if (ask === null) {
        notes.push(`${from}: not started: the project asks for it${changed ? ' and its spec changed since you allowed it' : ''}; to allow it: turnloom mcp allow ${server.name}`);
        continue;
      }
      if (!(await ask(server, changed))) {
        notes.push(`${from}: not started: you did not allow it`);
        continue;
      }
      allowServer(server);
    }
    try {
      const expanded = expandVariables({ mcp: { [server.name]: server.spec } }, env);
      for (const value of expanded.expanded) registerSecret(value);
      mcp[server.name] = expanded.config.mcp![server.name]!;
    } catch (error) {
      if (!(error instanceof MissingVariable)) throw error;
      notes.push(`${from}: not started: ${error.message}`);
    }
  }
  return { config: { ...loaded.config, mcp }, notes };
}

/**
 * Asks on the terminal, when both standard input and standard error are
 * one; `null` when they are not (nobody is there to answer).
 */
export function terminalQuestion(input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): ServerQuestion | null {
  if (!input.isTTY || !output.isTTY) return null;
  return async (server, changed) => {
    const { createInterface } = await import('node:readline/promises');
    const lines = createInterface({ input, output });
    try {
      const what = `${server.file} asks to start MCP server "${server.name}"${changed ? ' (its spec changed since you allowed it)' : ''}: ${specSummary(server.spec)}`;
      for (;;) {
        const answer = (await lines.question(`? ${what}\n  [y]es, and remember it / [n]o: `)).trim().toLowerCase();
        if (answer === 'y' || answer === 'yes') return true;
        if (answer === 'n' || answer === 'no' || answer === '') return false;
      }
    } finally {
      lines.close();
    }
  };
}
