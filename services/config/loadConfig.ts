import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { TurnloomError } from '../../domain/index.ts';
import { configIssueLine } from './configIssues.ts';
import { configReferenceProblem } from './configReferences.ts';
import { configSchema, type TurnloomConfig } from './configSchema.ts';
import { MissingVariable, expandVariables } from './expandVariables.ts';
import { jsonErrorOffset } from './jsonErrorOffset.ts';
import { mergeConfigs } from './mergeConfigs.ts';
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

export interface LoadedConfig {
  /** The user file and the project file merged; `{}` when there is neither. */
  config: TurnloomConfig;
  /** The files that were there and were read, user file first. */
  files: string[];
  /** Values a `${VAR}` was expanded into: for whoever keeps secrets out of logs. */
  expanded: string[];
}

const invalid = (file: string, message: string) => new TurnloomError('invalid_payload', `${file}: ${message}`, { file });

/** Line and column (from 1) of a character offset. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length} column ${before.at(-1)!.length + 1}`;
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
function readConfigFile(file: string, env: Readonly<Record<string, string | undefined>>): { config: TurnloomConfig; expanded: string[] } | null {
  const text = readIfThere(file);
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // Only where: the parser's message may quote the text around the mistake, which may hold a secret.
    const offset = jsonErrorOffset(text) ?? text.length;
    const where = text.trim() === '' ? ' (the file is empty; {} is an empty configuration)' : offset >= text.length ? ' (it ends too soon)' : ` at ${lineAndColumn(text, offset)}`;
    throw invalid(file, `not valid JSON${where}`);
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw invalid(file, configIssueLine(parsed.error));
  try {
    return expandVariables(parsed.data, env);
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
  const project = projectFile === null ? null : readConfigFile(projectFile, env);
  if (project) {
    const refusal = projectFileRefusal(project.config, user?.config ?? {});
    if (refusal) throw invalid(projectFile!, `${refusal.path}: ${refusal.message}`);
  }
  const config = mergeConfigs(user?.config ?? {}, project?.config ?? {});
  const files = [...(user ? [userFile] : []), ...(project ? [projectFile!] : [])];
  const problem = configReferenceProblem(config);
  if (problem) throw invalid(files.join(' + ') || 'configuration', `${problem.path}: ${problem.message}`);
  return { config, files, expanded: [...(user?.expanded ?? []), ...(project?.expanded ?? [])] };
}
