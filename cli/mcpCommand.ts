import { resolve } from 'node:path';
import { type McpServerConfig, configIssueLine, fromMcpServersEntry, mcpServersEntrySchema } from '../services/config/index.ts';
import { UsageError, parseOptions } from './cliErrors.ts';
import { commandConfig } from './commandConfig.ts';
import { mcpUsage } from './commandUsage.ts';
import { allowServer, isAllowed, specSummary } from './mcpConsent.ts';
import { editUserFile } from './userConfigFile.ts';


/** `K=V` (env) or `K:V` (header) options as a record; a malformed one is one line. */
function pairs(values: string[] | undefined, separator: '=' | ':', option: string): Record<string, string> | undefined {
  if (values === undefined || values.length === 0) return undefined;
  return Object.fromEntries(
    values.map((value) => {
      const at = value.indexOf(separator);
      if (at <= 0) throw new UsageError(`mcp add: ${option} takes NAME${separator}VALUE, not "${value}"`);
      return [value.slice(0, at).trim(), value.slice(at + 1).trim()];
    }),
  );
}

/** `turnloom mcp add|list|remove|allow`: the user file's servers, and the project's it offers. */
export async function mcpCommand(args: string[]): Promise<number> {
  const dash = args.indexOf('--');
  const { values, positionals } = parseOptions('mcp', {
    args: dash < 0 ? args : args.slice(0, dash),
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      cwd: { type: 'string', default: '.' },
      env: { type: 'string', multiple: true },
      url: { type: 'string' },
      header: { type: 'string', multiple: true },
      transport: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const [action, name, ...extra] = positionals;
  if (values.help || action === undefined) {
    console.log(mcpUsage);
    return 0;
  }
  const workspace = resolve(values.cwd!);
  switch (action) {
    case 'list': {
      const loaded = commandConfig(workspace);
      const rows = [
        ...Object.entries(loaded.config.mcp ?? {}).map(([server, spec]) => ({ name: server, from: 'user', state: spec.enabled === false ? 'disabled' : 'started', spec: specSummary(spec) })),
        ...loaded.offered.map((server) => ({
          name: server.name,
          from: server.file,
          state: server.refused !== null ? `refused: ${server.refused}` : isAllowed(loaded.config, server) ? 'allowed' : loaded.config.mcpAllowed?.[server.name] ? 'changed since allowed' : 'not allowed',
          spec: specSummary(server.spec),
        })),
      ];
      if (values.json) console.log(JSON.stringify(rows));
      else if (rows.length === 0) console.log('no MCP servers (add one: turnloom mcp add NAME -- COMMAND ARGS...)');
      else for (const row of rows) console.log(`${row.name}  ${row.from}  ${row.state}  ${row.spec}`);
      return 0;
    }
    case 'add': {
      if (name === undefined) throw new UsageError('mcp add: give the server a name: turnloom mcp add NAME -- COMMAND ARGS... (or --url URL)');
      const command = dash < 0 ? [] : args.slice(dash + 1);
      if (extra.length > 0) throw new UsageError(`mcp add: put the command after "--": turnloom mcp add ${name} -- ${extra.join(' ')}`);
      if ((command.length > 0) === (values.url !== undefined)) throw new UsageError('mcp add: give either a command after "--" or --url URL');
      const entry = mcpServersEntrySchema.safeParse(
        values.url !== undefined
          ? { type: values.transport === 'sse' ? 'sse' : 'http', url: values.url, headers: pairs(values.header, ':', '--header') }
          : { command: command[0], args: command.slice(1), env: pairs(values.env, '=', '--env') },
      );
      if (!entry.success) throw new UsageError(`mcp add: ${configIssueLine(entry.error)}`);
      const loaded = commandConfig(null);
      if (loaded.config.mcp?.[name] !== undefined) throw new UsageError(`mcp add: the user file has a server named "${name}" already; remove it first (turnloom mcp remove ${name})`);
      const spec: McpServerConfig = fromMcpServersEntry(entry.data);
      const file = editUserFile(['mcp', name], spec);
      console.log(`added MCP server "${name}" to ${file}: ${specSummary(spec)}`);
      return 0;
    }
    case 'remove': {
      if (name === undefined) throw new UsageError('mcp remove: name the server: turnloom mcp remove NAME');
      const raw = commandConfig(null);
      if (raw.config.mcp?.[name] === undefined) throw new UsageError(`mcp remove: the user file has no server named "${name}" (turnloom mcp list)`);
      // Under whichever key the file names it.
      let file = editUserFile(['mcp', name], undefined);
      file = editUserFile(['mcpServers', name], undefined);
      console.log(`removed MCP server "${name}" from ${file}`);
      return 0;
    }
    case 'allow': {
      if (name === undefined) throw new UsageError('mcp allow: name the server: turnloom mcp allow NAME');
      const loaded = commandConfig(workspace);
      const server = loaded.offered.find((offered) => offered.name === name);
      if (server === undefined) throw new UsageError(`mcp allow: the project at ${workspace} asks for no server named "${name}" (turnloom mcp list)`);
      if (server.refused !== null) throw new UsageError(`mcp allow: ${name} (${server.file}) cannot be started: ${server.refused}`);
      const file = allowServer(server);
      console.log(`allowed MCP server "${name}" from ${server.file} (${specSummary(server.spec)}); remembered in ${file} until its spec changes`);
      return 0;
    }
    default:
      throw new UsageError(`mcp: no action "${action}"; the actions are add, list, remove and allow (turnloom mcp --help)`);
  }
}
