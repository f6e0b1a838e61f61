import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { TurnloomError } from '../../domain/index.ts';
import { configIssueLine } from './configIssues.ts';
import { configReferenceProblem } from './configReferences.ts';
import { z } from 'zod';
import { type McpServerConfig, configSchema, mcpServersEntrySchema, type TurnloomConfig } from './configSchema.ts';
import { MissingVariable, expandVariables } from './expandVariables.ts';
import { McpShapeProblem, mcpSpecDigest, withMcpServers } from './mcpServersShape.ts';
import { mergeConfigs } from './mergeConfigs.ts';
import { type JsonDialect, parseJsonText } from './parseJsonText.ts';
import { projectFileRefusal } from './projectFileLimits.ts';

/** The project file's name, at the workspace root. */
export const PROJECT_CONFIG_FILE = 'turnloom.json';

/** The user file: `$XDG_CONFIG_HOME/turnloom/config.json`, else `~/.config/turnloom/config.json` (a relative XDG_CONFIG_HOME is ignored, as the specification says). */
export function userConfigPath(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const configured = env.XDG_CONFIG_HOME;
  return join(configured && isAbsolute(configured) ? configured : join(homedir(), '.config'), 'turnloom', 'config.json');
}

export const projectConfigPath = (workspace: string): string => join(workspace, PROJECT_CONFIG_FILE);

export interface LoadConfigOptions {
  /** The workspace whose `turnloom.json` is read; `null`: only the user file (a process that serves no workspace). */
  workspace: string | null;
  /** Where `XDG_CONFIG_HOME`, `HOME` and the `${VAR}`s of MCP servers come from (default: this process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Read this user file instead of the one under the XDG config home. */
  userFile?: string;
}

/** The project's file of MCP servers, at the workspace root, as Claude Code writes it. */
export const PROJECT_MCP_FILE = '.mcp.json';

const mcpFileSchema = z.object({ mcpServers: z.record(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'must be 1 to 32 letters, digits, "_" or "-"'), mcpServersEntrySchema) });

/** An MCP server a project asks for: started only once the person allows it (`mcpAllowed` in the user file). */
export interface OfferedMcpServer {
  name: string;
  /** The project file that names it. */
  file: string;
  /** As the file says it, `${VAR}`s unexpanded. */
  spec: McpServerConfig;
  /** The SHA-256 of `spec`, which an allowance names. */
  digest: string;
  /** Why it is not offered at all, or `null`. */
  refused: string | null;
}

export interface LoadedConfig {
  /** The user file and the project file merged; `{}` when there is neither. */
  config: TurnloomConfig;
  /** The files that were there and were read, user file first. */
  files: string[];
  /** Values a `${VAR}` was expanded into: for whoever keeps secrets out of logs. */
  expanded: string[];
  /** The MCP servers the project asks for (its turnloom.json's and .mcp.json's): not in `config`, never started unasked. */
  offered: OfferedMcpServer[];
  /** Each file read, user file first, as written: `${VAR}`s unexpanded (the project's MCP servers are in `offered`). For showing where a value came from. */
  layers: ConfigLayer[];
}

/** One configuration file as it was written. */
export interface ConfigLayer {
  source: 'user' | 'project';
  file: string;
  config: TurnloomConfig;
}

/** A mistake in `file` (at `line:column`, when it is one of syntax), as one line. */
const invalid = (file: string, message: string, at = '') => new TurnloomError('invalid_payload', `${file}${at}: ${message}`, { file });

/**
 * The file's value; where it is not JSON (or, for `jsonc`, JSON with
 * comments and trailing commas), an error that says only where and why:
 * `file:line:column: …`, as editors and terminals link it.
 */
function parsedJson(file: string, text: string, dialect: JsonDialect, whenEmpty?: string): unknown {
  const parsed = parseJsonText(text, dialect);
  if (parsed.ok) return parsed.value;
  const { line, column, problem } = parsed.error;
  if (whenEmpty !== undefined && text.trim() === '') throw invalid(file, `the file is empty (${whenEmpty})`);
  throw invalid(file, `not valid JSON: ${problem}`, `:${line}:${column}`);
}

/** The file's text, or `null` when there is none; a file that is there but cannot be read is an error. */
function readIfThere(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    if (code === 'EISDIR') throw invalid(file, 'is a folder, not a file');
    if (code === 'EACCES' || code === 'EPERM') throw invalid(file, 'permission denied (make the file readable by this user)');
    throw invalid(file, `cannot read it (${(error as Error).message})`);
  }
}

/** One file parsed and checked on its own; `null` when it is not there. */
function readConfigFile(
  file: string,
  env: Readonly<Record<string, string | undefined>>,
  project = false,
): { config: TurnloomConfig; written: TurnloomConfig; expanded: string[]; offered?: Record<string, McpServerConfig> } | null {
  const text = readIfThere(file);
  if (text === null) return null;
  const raw = parsedJson(file, text, 'jsonc', '{} is an empty configuration');
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw invalid(file, configIssueLine(parsed.error));
  let config: TurnloomConfig;
  try {
    config = withMcpServers(parsed.data);
  } catch (error) {
    if (error instanceof McpShapeProblem) throw invalid(file, `${error.path}: ${error.message}`);
    throw error;
  }
  // The project's servers are offered, not started: their `${VAR}`s are expanded only once one is allowed.
  const { mcp, ...kept } = config;
  const offered = project ? mcp : undefined;
  try {
    const written = project ? kept : config;
    return { ...expandVariables(written, env), written, ...(offered ? { offered } : {}) };
  } catch (error) {
    if (error instanceof MissingVariable) throw invalid(file, error.message);
    throw error;
  }
}

/**
 * The configuration for a process: the user file and the project file,
 * each optional, merged (`mergeConfigs`: the project file's keys over the
 * user file's, permission rules added up).
 *
 * Precedence, from strongest: command-line flags, then the environment
 * variables turnloom already reads (TURNLOOM_PROVIDER, TURNLOOM_MODEL,
 * ANTHROPIC_BASE_URL…), then the project file, then the user file, then the
 * built-in defaults. This function does the middle of that (project over
 * user); whoever reads the result lays the environment and flags on top.
 *
 * The project file is in the repository the model edits, so it may only
 * tighten (`projectFileRefusal`). Every mistake is one `invalid_payload`
 * error whose message names the file, the key and what is allowed there.
 */
export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const env = options.env ?? process.env;
  const userFile = options.userFile ?? userConfigPath(env);
  const user = readConfigFile(userFile, env);
  const projectFile = options.workspace === null ? null : projectConfigPath(options.workspace);
  const project = projectFile === null ? null : readConfigFile(projectFile, env, true);
  if (project) {
    const refusal = projectFileRefusal(project.config, user?.config ?? {});
    if (refusal) throw invalid(projectFile!, `${refusal.path}: ${refusal.message}`);
  }
  const config = mergeConfigs(user?.config ?? {}, project?.config ?? {});
  const files = [...(user ? [userFile] : []), ...(project ? [projectFile!] : [])];
  const problem = configReferenceProblem(config);
  if (problem) throw invalid(files.join(' + ') || 'configuration', `${problem.path}: ${problem.message}`);
  const mcpFile = options.workspace === null ? null : join(options.workspace, PROJECT_MCP_FILE);
  const mcpServers = mcpFile === null ? null : readMcpFile(mcpFile);
  const offered = offeredServers(config, [
    ...(project?.offered ? [{ file: projectFile!, servers: project.offered }] : []),
    ...(mcpServers ? [{ file: mcpFile!, servers: mcpServers }] : []),
  ]);
  const layers: ConfigLayer[] = [...(user ? [{ source: 'user' as const, file: userFile, config: user.written }] : []), ...(project ? [{ source: 'project' as const, file: projectFile!, config: project.written }] : [])];
  return { config, files: [...files, ...(mcpServers ? [mcpFile!] : [])], expanded: [...(user?.expanded ?? []), ...(project?.expanded ?? [])], offered, layers };
}

/** A project's `.mcp.json` (`{"mcpServers": {…}}`, as Claude Code writes it) mapped onto our shape; `null` when there is none. */
function readMcpFile(file: string): Record<string, McpServerConfig> | null {
  const text = readIfThere(file);
  if (text === null) return null;
  // Claude Code and the other tools that read it take strict JSON.
  const parsed = mcpFileSchema.safeParse(parsedJson(file, text, 'json'));
  if (!parsed.success) throw invalid(file, configIssueLine(parsed.error));
  return withMcpServers({ mcpServers: parsed.data.mcpServers }).mcp ?? {};
}

/**
 * The servers a project asks for, in the order its files name them, each
 * with the digest an allowance is bound to, and why it cannot be offered
 * when it cannot: it names a `cwd` (a folder of the repository's choosing
 * would let it run the repository's programs), or a server of the user's,
 * or an earlier file's, has its name.
 */
function offeredServers(config: TurnloomConfig, sources: ReadonlyArray<{ file: string; servers: Record<string, McpServerConfig> }>): OfferedMcpServer[] {
  const offered: OfferedMcpServer[] = [];
  for (const { file, servers } of sources) {
    for (const [name, spec] of Object.entries(servers)) {
      const refused =
        config.mcp?.[name] !== undefined
          ? 'the user file has a server of this name, which is the one used'
          : offered.some((earlier) => earlier.name === name)
            ? `${offered.find((earlier) => earlier.name === name)!.file} names a server of this name too, which is the one offered`
            : 'cwd' in spec && spec.cwd !== undefined
              ? 'a project may not set a server’s cwd (it would run in a folder the repository chooses); set it in the user file'
              : null;
      offered.push({ name, file, spec, digest: mcpSpecDigest(spec), refused });
    }
  }
  return offered;
}
