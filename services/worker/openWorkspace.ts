import { resolve } from 'node:path';
import { Checkpoints, type RepositoryLocation } from '../../adapters/git/index.ts';
import { WorkspaceTools } from '../../adapters/tools/index.ts';
import type { ToolExecutor } from '../../domain/index.ts';
import type { CheckpointSetting } from './turnWork.ts';

export interface WorkspaceOptions {
  /** Folders inside the workspace that are never captured or restored by a checkpoint (a data folder kept there). */
  exclude?: readonly string[];
  /** Folders and files commands see empty, when they run isolated (turnloom's data, secret files). */
  hide?: readonly string[];
  /** Where its repository is, when the caller already asked (`Checkpoints.locate`): git is not asked again. */
  location?: RepositoryLocation | null;
}

export interface Workspace {
  /** The folder, resolved. */
  root: string;
  /** The project it belongs to: its git repository's top folder, or the folder itself. */
  project: string;
  tools: ToolExecutor;
  /** Its checkpoints, or why it keeps none (it is not a git repository). */
  checkpoints: CheckpointSetting;
  /** Whether commands run isolated here, and when not, why. */
  isolation: { isolated: true } | { isolated: false; reason: string };
}

/**
 * The folder a worker's model works in: its tools (confined to it), and its
 * checkpoints when it is a git repository. Give both to a `Worker`.
 */
export async function openWorkspace(dir: string, options: WorkspaceOptions = {}): Promise<Workspace> {
  const root = resolve(dir);
  const tools = new WorkspaceTools({ root, hiddenPaths: (options.hide ?? []).map((path) => resolve(path)) });
  // Side by side: both are a few processes waited for (git's, the confinement's probe), and a run's first model call waits for them.
  const [store, isolation] = await Promise.all([Checkpoints.open(root, { exclude: [...(options.exclude ?? [])], ...(options.location !== undefined ? { location: options.location } : {}) }), tools.isolation()]);
  return {
    root,
    project: store?.root ?? root,
    tools,
    checkpoints: store ? { store } : { off: `${root} is not a git repository: turns run without checkpoints, and cannot be undone` },
    isolation: isolation.isolated ? { isolated: true } : { isolated: false, reason: isolation.reason },
  };
}
