import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Checkpoints, type RepositoryLocation } from '../adapters/git/index.ts';
import type { ToolExecutor } from '../domain/index.ts';
import type { CheckpointSetting } from '../services/worker/index.ts';
import { openWorkspace } from '../services/worker/openWorkspace.ts';
import { UsageError } from './cliErrors.ts';
import { dataHome, defaultDataFolder } from './dataHome.ts';

/**
 * The data folder a command on this workspace uses: `--data` when given,
 * else the default one of the workspace's project (its git repository's top
 * folder, or the folder itself). `location` is where the repository was
 * found, when it had to be looked for: `workspaceSetup` takes it, so git is
 * asked once.
 */
export async function dataFolderFor(dir: string, given: string | undefined): Promise<{ path: string; location?: RepositoryLocation | null }> {
  if (given !== undefined) return { path: resolve(given) };
  const location = await Checkpoints.locate(resolve(dir));
  return { path: defaultDataFolder(location?.root ?? resolve(dir)), location };
}

export interface WorkspaceSetup {
  workspace: string;
  /** The project it belongs to: its git repository's top folder, or the workspace itself (what the default data folder is named after). */
  project: string;
  tools: ToolExecutor;
  checkpoints: CheckpointSetting;
  /** One line for the console: where the agent works, and whether its turns can be undone. */
  summary: string;
  /** A warning line for the console when commands cannot run isolated here, saying what that exposes and what to do; null when they can. */
  isolationWarning: string | null;
  /** What isolated commands, and MCP servers, see empty: turnloom's data and the secret files this process reads. */
  hidden: string[];
}

/** What running commands without isolation exposes, and the ways out, in one line. */
const isolationWarning = (reason: string): string =>
  `warning: commands run without isolation (${reason}): a command can read the environment of this process, its keys included, and of every process of this user through /proc, and what it starts survives a kill -9 of turnloom; allow unprivileged user namespaces (util-linux unshare and setpriv) to isolate them, or approve every command yourself (mode ask or auto-edits, no allow rules for bash), and run turnloom as a user that holds no other secrets (see "Commands and secrets" in docs/architecture.md)`;

/**
 * The folder a worker's model works in: its tools, and its checkpoints when
 * it is a git repository; `dataDir`, this process's data folder, is never
 * part of a checkpoint (its marker says so too, but a tool may delete that).
 * Commands and MCP servers see it, turnloom's folder under the XDG data
 * home (the threads of every workspace) and `secretFiles` (an auth file,
 * NATS credentials) empty, when they run isolated.
 */
export async function workspaceSetup(command: string, option: string, dir: string, dataDir: string | null, secretFiles: readonly string[] = [], location?: RepositoryLocation | null): Promise<WorkspaceSetup> {
  const workspace = resolve(dir);
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${command}: ${option} ${workspace} is not a folder`);
  const hidden = [dataHome(), ...(dataDir === null ? [] : [dataDir]), ...secretFiles];
  const opened = await openWorkspace(workspace, { exclude: dataDir === null ? [] : [dataDir], hide: hidden, ...(location !== undefined ? { location } : {}) });
  const checkpointsOn = 'store' in opened.checkpoints;
  return {
    workspace,
    project: opened.project,
    tools: opened.tools,
    checkpoints: opened.checkpoints,
    summary: checkpointsOn ? `workspace ${workspace} (git checkpoints on)` : `workspace ${workspace} (not a git repository: no checkpoints)`,
    isolationWarning: opened.isolation.isolated ? null : isolationWarning(opened.isolation.reason),
    hidden,
  };
}
