import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Checkpoints } from '../adapters/git/index.ts';
import { WorkspaceTools } from '../adapters/tools/index.ts';
import type { CheckpointSetting, WorkerOptions } from '../services/worker/index.ts';
import { UsageError } from './cliErrors.ts';

export interface WorkspaceSetup {
  workspace: string;
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
export async function workspaceSetup(command: string, option: string, dir: string, dataDir: string | null = null): Promise<WorkspaceSetup> {
  const workspace = resolve(dir);
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${command}: ${option} ${workspace} is not a folder`);
  const store = await Checkpoints.open(workspace, { exclude: dataDir === null ? [] : [dataDir] });
  const checkpoints: CheckpointSetting = store ? { store } : { off: `${workspace} is not a git repository: turns run without checkpoints, and cannot be undone` };
  return {
    workspace,
    tools: new WorkspaceTools({ root: workspace }),
    checkpoints,
    summary: store ? `workspace ${workspace} (git checkpoints on)` : `workspace ${workspace} (not a git repository: no checkpoints)`,
  };
}
