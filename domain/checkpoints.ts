/** Which side of a turn a checkpoint captures the work tree at. */
export type CheckpointSide = 'before' | 'after';

/** One file a turn (or a revert) changed. */
export interface FileChange {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  additions: number;
  deletions: number;
  binary: boolean;
  oldPath?: string;
}

/** A unified diff between two checkpoints, cut (and marked) past a size. */
export interface CheckpointDiff {
  files: FileChange[];
  patch: string;
  truncated: boolean;
}

/** A captured work tree: a commit no branch points to, kept alive by a hidden ref. */
export interface CapturedTree {
  ref: string;
  commit: string;
}

/** A turn's checkpoints as the log has them; `diff` is from `before` to `after`. */
export interface TurnCheckpoint {
  before: CapturedTree | null;
  after: CapturedTree | null;
  diff: CheckpointDiff | null;
}

/**
 * The port a worker reaches its workspace's history through (git, in
 * `adapters/git`). Capturing never touches the user's index, HEAD, branches
 * or stash; restoring changes only the work tree.
 */
export interface WorkspaceCheckpoints {
  capture(threadId: string, turnId: string, side: CheckpointSide): Promise<CapturedTree>;
  diff(from: string, to: string, options?: { path?: string; maxChars?: number }): Promise<CheckpointDiff>;
  /** Makes the work tree equal to the commit; answers what it changed. */
  restore(commit: string): Promise<FileChange[]>;
}
