import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Checkpoints } from '../adapters/git/index.ts';
import { WorkspaceTools } from '../adapters/tools/index.ts';
import type { CheckpointSetting, WorkerOptions } from '../services/worker/index.ts';
import { UsageError } from './cliErrors.ts';
import { defaultDataFolder } from './dataHome.ts';

/**
 * The data folder a command on this workspace uses: `--data` when given,
 * else the default one of the workspace's project (its git repository's top
 * folder, or the folder itself).
 */
export async function dataFolderFor(dir: string, given: string | undefined): Promise<string> {
  if (given !== undefined) return resolve(given);
  return defaultDataFolder((await Checkpoints.topLevel(resolve(dir))) ?? resolve(dir));
}

export interface WorkspaceSetup {
  workspace: string;
  /** The project it belongs to: its git repository's top folder, or the workspace itself (what the default data folder is named after). */
  project: string;
  tools: NonNullable<WorkerOptions['tools']>;
  checkpoints: CheckpointSetting;
  /** One line for the console: where the agent works, and whether its turns can be undone. */
  summary: string;
}

/**
 * The folder a worker's model works in: its tools, and its checkpoints when
 * it is a git repository; `dataDir`, this process's data folder, is never
 * part of a checkpoint (its marker says so too, but a tool may delete that).
 */
export async function workspaceSetup(command: string, option: string, dir: string, dataDir: string | null): Promise<WorkspaceSetup> {
  const workspace = resolve(dir);
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${command}: ${option} ${workspace} is not a folder`);
  const store = await Checkpoints.open(workspace, { exclude: dataDir === null ? [] : [dataDir] });
  const checkpoints: CheckpointSetting = store ? { store } : { off: `${workspace} is not a git repository: turns run without checkpoints, and cannot be undone` };
  return {
    workspace,
    project: store?.root ?? workspace,
    tools: new WorkspaceTools({ root: workspace }),
    checkpoints,
    summary: store ? `workspace ${workspace} (git checkpoints on)` : `workspace ${workspace} (not a git repository: no checkpoints)`,
  };
}
