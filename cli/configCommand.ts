import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { type ConfigSource, type ConfigValue, configSources, projectConfigPath, userConfigPath } from '../services/config/index.ts';
import { UsageError, parseOptions } from './cliErrors.ts';
import { commandConfig } from './commandConfig.ts';
import { configUsage } from './commandUsage.ts';
import { isAllowed } from './mcpConsent.ts';
import { environmentOverrides } from './providerRegistry.ts';

/** MCP `env` and `headers` values are where a file holds secrets: only their `${VAR}` references are shown. */
const secretHolder = (path: readonly string[]) => path[0] === 'mcp' && (path[2] === 'env' || path[2] === 'headers') && path.length === 4;

/** `Bearer ${TOKEN}` → `***${TOKEN}`: the variables' names, never written-out text, which could be a key. */
const masked = (value: string) => value.split(/(\$\{[A-Za-z_][A-Za-z0-9_]*\})/).map((part, index) => (index % 2 === 1 ? part : part === '' ? '' : '***')).join('');

/** A URL's user and password (`https://me:key@host`) are credentials: hidden. */
function withoutCredentials(value: string): string {
  if (!URL.canParse(value)) return value;
  const url = new URL(value);
  if (url.username === '' && url.password === '') return value;
  url.username = '***';
  url.password = '';
  return url.toString();
}

/** A value as it may be shown: what could be a secret is hidden. */
function shown(path: readonly string[], value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (secretHolder(path)) return masked(value);
  if (path.at(-1) === 'baseUrl' || path.at(-1) === 'url') return withoutCredentials(value);
  return value;
}

const tilde = (file: string) => (file.startsWith(`${homedir()}/`) ? `~${file.slice(homedir().length)}` : file);

function sourceText(source: ConfigSource | { kind: 'offered'; file: string; status: string }): string {
  switch (source.kind) {
    case 'default':
      return 'default';
    case 'user':
      return `user file ${tilde(source.file)}`;
    case 'project':
      return `project file ${tilde(source.file)}`;
    case 'environment':
      return `environment ${source.variable}`;
    case 'offered':
      return `offered by ${tilde(source.file)}: ${source.status}`;
  }
}

/**
 * `turnloom config`: the configuration a command run here would use, leaf
 * by leaf, each with where it came from (default, user file, project file,
 * environment), and the MCP servers the project offers. Keys are shown by
 * their variables' names, never their values.
 */
export async function configCommand(args: string[]): Promise<number> {
  const { values } = parseOptions('config', {
    args,
    options: { help: { type: 'boolean', short: 'h', default: false }, cwd: { type: 'string', default: '.' }, json: { type: 'boolean', default: false } },
  });
  if (values.help) {
    console.log(configUsage);
    return 0;
  }
  const workspace = resolve(values.cwd!);
  if (!existsSync(workspace)) throw new UsageError(`config: --cwd ${workspace}: no such folder`);
  const loaded = commandConfig(workspace);
  const entries: Array<Omit<ConfigValue, 'source'> & { source: ConfigSource | { kind: 'offered'; file: string; status: string } }> = configSources(loaded.layers, environmentOverrides(process.env));
  for (const server of loaded.offered) {
    const status = server.refused ?? (isAllowed(loaded.config, server) ? 'allowed' : `not allowed yet (turnloom mcp allow ${server.name})`);
    for (const [name, value] of Object.entries(server.spec)) entries.push({ path: ['mcp', server.name, name], value, source: { kind: 'offered', file: server.file, status } });
  }
  // Offered servers' env and headers are opened key by key, as the user file's are, so each is masked alike.
  const rows = entries.flatMap((entry) =>
    entry.path[0] === 'mcp' && entry.path.length === 3 && (entry.path[2] === 'env' || entry.path[2] === 'headers') && typeof entry.value === 'object' && entry.value !== null
      ? Object.entries(entry.value).map(([name, value]) => ({ ...entry, path: [...entry.path, name], value }))
      : [entry],
  );
  rows.sort((a, b) => a.path.join('.').localeCompare(b.path.join('.'), 'en', { numeric: true }));
  const files = { user: userConfigPath(), project: projectConfigPath(workspace) };
  const read = (file: string) => loaded.files.includes(file);
  if (values.json) {
    console.log(
      JSON.stringify({
        files: { user: { path: files.user, read: read(files.user) }, project: { path: files.project, read: read(files.project) } },
        values: rows.map(({ path, value, source }) => ({ path, value: shown(path, value), source })),
      }),
    );
    return 0;
  }
  console.log(`user file:    ${tilde(files.user)}${read(files.user) ? '' : ' (not there)'}`);
  console.log(`project file: ${tilde(files.project)}${read(files.project) ? '' : ' (not there)'}`);
  for (const { path, value, source } of rows) console.log(`${path.join('.')} = ${JSON.stringify(shown(path, value))}  (${sourceText(source)})`);
  return 0;
}
