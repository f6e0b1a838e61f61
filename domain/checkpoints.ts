/** A turn a revert undoes, by the checkpoints around it: what changed between them is what is put back. */
export interface RevertedTurn {
  turnId: string;
  before: string;
  after: string;
}

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

/**
 * What a change of the work tree did to its files. The list may be cut (a
 * turn that ran `npm install` adds tens of thousands of files, more than one
 * event or one answer can carry); the totals never are.
 */
export interface FileChanges {
  /** The changed files in path order: all of them, or the first ones when `filesOmitted` is not 0. */
  files: FileChange[];
  /** How many files changed, listed or not. */
  filesChanged: number;
  /** Lines added and removed over every changed file, listed or not (binary files count none). */
  additions: number;
  deletions: number;
  /** How many changed files the list leaves out (`filesChanged - files.length`). */
  filesOmitted: number;
}

/** A unified diff between two checkpoints: its files, and its patch cut (and marked) past a size. */
export interface CheckpointDiff extends FileChanges {
  patch: string;
  /** The patch was cut: it ends with a note saying how much of it is missing. */
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
  /** Files the turn's tools wrote that git ignores (`.env`, say): no checkpoint holds them, and a revert leaves them as they are. */
  uncaptured: string[];
}

/**
 * The port a worker reaches its workspace's history through (git, in
 * `adapters/git`). Capturing never touches the user's index, HEAD, branches
 * or stash; restoring changes only the work tree.
 */
export interface WorkspaceCheckpoints {
  capture(threadId: string, turnId: string, side: CheckpointSide): Promise<CapturedTree>;
  /** `maxFiles` bounds the list and `maxChars` the patch; the totals count everything. */
  diff(from: string, to: string, options?: { path?: string; maxChars?: number; maxFiles?: number }): Promise<CheckpointDiff>;
  /**
   * Undoes what each turn changed between its checkpoints, and nothing
   * else; refuses with a `conflict` naming the files changed since, unless
   * `force`. The work tree is first captured under `saveAs` (its id names a
   * revert). Answers what changed, listing at most `maxFiles` files.
   */
  /** Of these files (absolute paths), those git ignores: a checkpoint does not hold them. */
  ignored(paths: readonly string[]): Promise<string[]>;
  undo(turns: readonly RevertedTurn[], options: { saveAs: { threadId: string; id: string }; force: boolean; maxFiles?: number }): Promise<{ changes: FileChanges; saved: CapturedTree }>;
}
