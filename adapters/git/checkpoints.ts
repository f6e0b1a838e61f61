import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { capPatch } from './capPatch.ts';
import { checkpointRefName, checkpointRefPrefix, parseCheckpointRefName, threadRefPrefix, type Which } from './checkpointRefs.ts';
import { type CapturedTree, type CheckpointDiff, type FileChanges, type RevertedTurn, TurnloomError, type WorkspaceCheckpoints, summarizeChanges } from '../../domain/index.ts';
import { candidatePathspecs, excludedPathspecs, excludedPaths, foldersAbove, includedPathspecs } from './dataFolders.ts';
import { fileChangeArgs, parseFileChanges } from './fileChanges.ts';
import { type Git, type GitPlace, gitFor, runGit } from './runGit.ts';
import { withTemporaryIndex } from './temporaryIndex.ts';

export interface CheckpointRef {
  threadId: string;
  turnId: string;
  which: Which;
  ref: string;
  commit: string;
}

export interface DiffOptions {
  /** Only this file or folder, relative to the repository root, taken literally (no globs). */
  path?: string;
  maxChars?: number;
  /** Lists at most this many changed files (the totals count them all). */
  maxFiles?: number;
}

export interface CheckpointsOptions {
  /** Absolute folders never captured nor restored, besides every data folder found by its marker (the process's own `--data`, say). */
  exclude?: readonly string[];
  /** Where the folder's repository is, when `Checkpoints.locate` already asked git (`null`: in none); otherwise git is asked. */
  location?: RepositoryLocation | null;
}

/** Where a folder's repository is, as git answers from that folder (its work tree's own checks are `open`'s). */
export interface RepositoryLocation {
  /** The folder asked from, resolved. */
  dir: string;
  /** The work tree's top folder. */
  root: string;
  gitDir: string;
  /** The index git uses there (a linked worktree's is under the main repository's git dir). */
  indexPath: string;
}

/** A list of changed files longer than this is no longer read by anyone; the totals still count every file. */
const DEFAULT_MAX_FILES = 1_000;

/** Fixed identity: capture must work where no user.name is configured, and must not pose as the user. */
const identity = {
  GIT_AUTHOR_NAME: 'turnloom',
  GIT_AUTHOR_EMAIL: 'turnloom@localhost',
  GIT_COMMITTER_NAME: 'turnloom',
  GIT_COMMITTER_EMAIL: 'turnloom@localhost',
};

/** Callers hand in commit ids; anything else (an option, a revision expression) is refused before git sees it. */
const commitIdPattern = /^[0-9a-f]{4,64}$/i;

/** Plain unified text whatever the user's diff config: no colour, external diff tools or textconv filters. */
const plainDiff = ['--literal-pathspecs', 'diff', '--no-color', '--no-ext-diff', '--no-textconv', '--find-renames'];

/**
 * What `git rev-parse` answers to each of `questions`, in one process; a
 * path holding a newline makes the answers ambiguous, and is then asked
 * about one question at a time.
 */
async function revParse(git: Git, questions: string[][]): Promise<string[]> {
  const lines = (await git(['rev-parse', ...questions.flat()])).split('\n');
  if (lines.length === questions.length + 1 && lines.at(-1) === '') return lines.slice(0, -1);
  return Promise.all(questions.map(async (question) => (await git(['rev-parse', ...question])).replace(/\n$/, '')));
}

/** Snapshots of a work tree as commits under hidden refs, taken and restored without touching index, HEAD, branches or stash. */
export class Checkpoints implements WorkspaceCheckpoints {
  private constructor(
    readonly root: string,
    private readonly place: GitPlace,
    private readonly indexPath: string,
    private readonly excludedFolders: readonly string[],
  ) {}

  /** The top folder of the git work tree `dir` is in; `null` when it is in none (or git is missing). */
  static async topLevel(dir: string): Promise<string | null> {
    return (await Checkpoints.locate(dir))?.root ?? null;
  }

  /**
   * Where `dir`'s repository is; `null` when it is in none (or git is
   * missing). One config read and one rev-parse: a run's first model call
   * waits for them, and each process costs the caller a fork.
   */
  static async locate(dir: string): Promise<RepositoryLocation | null> {
    const found = await gitFor({ cwd: dir })
      .then((git) => revParse(git, [['--show-toplevel'], ['--absolute-git-dir'], ['--git-path', 'index']]))
      .catch(() => null);
    if (found === null) return null;
    const [root, gitDir, index] = found as [string, string, string];
    // The index path is relative to the folder asked from.
    return { dir: resolve(dir), root, gitDir, indexPath: resolve(dir, index) };
  }

  /** null when `dir` is not inside a git work tree (or git is missing). */
  static async open(dir: string, options: CheckpointsOptions = {}): Promise<Checkpoints | null> {
    const given = options.location;
    const location = given !== undefined && (given === null || given.dir === resolve(dir)) ? given : await Checkpoints.locate(dir);
    if (location === null) return null;
    const { root, gitDir, indexPath } = location;
    // A repository whose config (core.worktree) puts its work tree somewhere else is not this folder's: elsewhere, or
    // above it (`../..` made /tmp the work tree, and git then failed there): a work tree has its own `.git` (a folder, or a linked worktree's file).
    if (!contains(root, realpathSync(dir)) || !existsSync(join(root, '.git'))) return null;
    const place = { cwd: root, repository: { gitDir, workTree: root } };
    return new Checkpoints(root, place, indexPath, (options.exclude ?? []).map((folder) => resolve(folder)));
  }

  async capture(threadId: string, turnId: string, which: Which): Promise<CheckpointRef> {
    const git = await gitFor(this.place);
    // HEAD is read while the work tree is staged: neither touches what the other reads.
    const [tree, head] = await Promise.all([
      withTemporaryIndex(this.indexPath, async (env) => this.stageWorkTree(git, env, await this.excluded(git, env, { ignored: false }))),
      this.commitOrNull(git, 'HEAD'),
    ]);
    return this.keep(git, threadId, turnId, which, tree, head);
  }

  /** Commits `tree` (on `head`, HEAD's commit, so it reads as a change from the branch) and keeps it under its hidden ref. */
  private async keep(git: Git, threadId: string, turnId: string, which: Which, tree: string, head: string | null): Promise<CheckpointRef> {
    const ref = checkpointRefName(threadId, turnId, which);
    const parent = head === null ? [] : ['-p', head];
    // Quoted: ids may hold spaces, newlines or NUL, which an argv string cannot carry.
    const message = `turnloom checkpoint ${JSON.stringify(threadId)} ${JSON.stringify(turnId)} ${which}`;
    const commit = (await git(['commit-tree', '--no-gpg-sign', ...parent, '-m', message, tree], { env: identity })).trim();
    await git(['update-ref', ref, commit]);
    return { threadId, turnId, which, ref, commit };
  }

  /** Sorted by ref name; every thread's when threadId is omitted. */
  async list(threadId?: string): Promise<CheckpointRef[]> {
    const prefix = threadId === undefined ? checkpointRefPrefix : threadRefPrefix(threadId);
    const output = await runGit(this.place, ['for-each-ref', '--sort=refname', '--format=%(refname)%00%(objectname)', prefix]);
    const refs: CheckpointRef[] = [];
    for (const line of output.split('\n')) {
      const [ref = '', commit = ''] = line.split('\0');
      const ids = parseCheckpointRefName(ref);
      if (ids !== null && (threadId === undefined || ids.threadId === threadId)) refs.push({ ...ids, ref, commit });
    }
    return refs;
  }

  async ignored(paths: readonly string[]): Promise<string[]> {
    const git = await gitFor(this.place);
    const found: string[] = [];
    // One path a call: check-ignore quotes what it prints unless it reads its paths from stdin; exit 1 (no output) is "not ignored".
    for (const path of paths) if ((await git(['check-ignore', '--', path], { emptyOnExit: [1] })).trim() !== '') found.push(path);
    return found;
  }

  /** Unified diff between two commit ids. */
  async diff(from: string, to: string, options: DiffOptions = {}): Promise<CheckpointDiff> {
    const git = await gitFor(this.place);
    const [fromCommit, toCommit] = await Promise.all([this.commitId(git, from), this.commitId(git, to)]);
    const pathspec = options.path === undefined ? [] : ['--', options.path];
    const [summary, patch] = await Promise.all([
      git([...plainDiff, ...fileChangeArgs, fromCommit, toCommit, ...pathspec]),
      git([...plainDiff, fromCommit, toCommit, ...pathspec]),
    ]);
    return { ...summarizeChanges(parseFileChanges(summary), options.maxFiles ?? DEFAULT_MAX_FILES), ...capPatch(patch, options.maxChars ?? 100_000) };
  }

  /**
   * Undoes what `turns` changed, each between its checkpoints, and nothing
   * else: every file one of them changed goes back to how it was before the
   * first of them that changed it; every other file (a person's work since,
   * a file no turn touched) stays as it is, and data folders are never
   * touched. A file changed again since the last of those turns changed it
   * is a conflict: nothing is changed, and the conflict names the files,
   * unless `force`. Before changing anything, the whole work tree is
   * captured under `saveAs` (a `reverted` checkpoint), so nothing a revert
   * overwrites is lost.
   */
  async undo(turns: readonly RevertedTurn[], options: UndoOptions): Promise<UndoResult> {
    const git = await gitFor(this.place);
    const plan = await this.undoPlan(git, turns);
    return withTemporaryIndex(this.indexPath, async (env) => {
      // Ignored data folders count too: an older checkpoint may hold files of a folder ignored since.
      const excluded = await this.excluded(git, env, { ignored: true });
      const current = await this.stageWorkTree(git, env, excluded);
      // A file where a left-out folder's parent now is would replace the folder, database and all.
      const above = new Set(foldersAbove(excluded));
      const left = (path: string) => above.has(path) || excluded.some((out) => path === out || path.startsWith(`${out}/`));
      const now = await this.treeEntries(git, current);
      const paths = [...plan.keys()].filter((path) => !left(path));
      const conflicts = paths.filter((path) => !sameEntry(now.get(path), plan.get(path)!.expected));
      if (conflicts.length > 0 && !options.force) {
        throw new TurnloomError('conflict', `${conflicts.length === 1 ? `${conflicts[0]} was` : `${conflicts.length} files were`} changed after the turn that last changed ${conflicts.length === 1 ? 'it' : 'them'}: nothing was reverted; undo or keep those changes first, or revert with force (the work tree is saved before a forced revert)`, {
          files: conflicts.slice(0, MAX_LISTED_CONFLICTS),
          conflicts: conflicts.length,
        });
      }
      const saved = await this.keep(git, options.saveAs.threadId, options.saveAs.id, 'reverted', current, await this.commitOrNull(git, 'HEAD'));
      const wanted = await this.treeWith(git, current, paths.map((path) => ({ path, entry: plan.get(path)!.target })));
      const changes = parseFileChanges(await git([...plainDiff, ...fileChangeArgs, current, wanted]));
      // The temporary index matches the work tree, and `wanted` differs from it only in the turns' files: the
      // reset rewrites exactly those (with their modes), deletes those the turns had added, and leaves the rest.
      await git(['read-tree', '--reset', '-u', wanted], { env });
      return { changes: summarizeChanges(changes, options.maxFiles ?? DEFAULT_MAX_FILES), saved: { ref: saved.ref, commit: saved.commit } };
    });
  }

  /** For every file the turns changed: how the first that changed it found it, and how the last left it. */
  private async undoPlan(git: Git, turns: readonly RevertedTurn[]): Promise<Map<string, { target: TreeEntry | null; expected: TreeEntry | null }>> {
    const plan = new Map<string, { target: TreeEntry | null; expected: TreeEntry | null }>();
    for (const turn of turns) {
      const [before, after] = await Promise.all([this.commitId(git, turn.before), this.commitId(git, turn.after)]);
      for (const change of parseRawDiff(await git(['diff', '--raw', '--no-abbrev', '-z', '--no-renames', '--no-ext-diff', '--no-textconv', before, after]))) {
        const known = plan.get(change.path);
        plan.set(change.path, { target: known ? known.target : change.before, expected: change.after });
      }
    }
    return plan;
  }

  /** Every file of a tree, by path. */
  private async treeEntries(git: Git, tree: string): Promise<Map<string, TreeEntry>> {
    const entries = new Map<string, TreeEntry>();
    for (const { mode, type, object, path } of parseTreeEntries(await git(['ls-tree', '-r', '-z', '--full-tree', tree]))) {
      if (type !== 'tree') entries.set(path, { mode, object });
    }
    return entries;
  }

  /** `tree` with these files set (or removed, for `null`). */
  private async treeWith(git: Git, tree: string, files: ReadonlyArray<{ path: string; entry: TreeEntry | null }>): Promise<string> {
    return withTemporaryIndex(null, async (env) => {
      await git(['read-tree', tree], { env });
      const removed = files.filter(({ entry }) => entry === null).map(({ path }) => path);
      const set = files.filter((file): file is { path: string; entry: TreeEntry } => file.entry !== null);
      // In batches: a turn may have changed more files than one command line holds.
      for (let at = 0; at < removed.length; at += ARGS_PER_CALL) await git(['update-index', '--force-remove', '--', ...removed.slice(at, at + ARGS_PER_CALL)], { env });
      for (let at = 0; at < set.length; at += ARGS_PER_CALL) {
        await git(['update-index', '--add', ...set.slice(at, at + ARGS_PER_CALL).flatMap(({ path, entry }) => ['--cacheinfo', `${entry.mode},${entry.object},${path}`])], { env });
      }
      return (await git(['write-tree'], { env })).trim();
    });
  }

  /** What to leave out of `env`'s view of the work tree (see `dataFolders.ts`); `ignored`: look inside ignored folders too. */
  private async excluded(git: Git, env: { GIT_INDEX_FILE: string }, { ignored }: { ignored: boolean }): Promise<string[]> {
    const listing = await git(['ls-files', '-z', '--cached', '--others', ...(ignored ? [] : ['--exclude-standard']), '--', ...candidatePathspecs], { env });
    return excludedPaths(this.root, listing, this.excludedFolders);
  }

  /**
   * Stages the whole work tree (untracked included, ignored excluded, deletions dropped) into `env`'s index,
   * without what is left out: never read from disk, and dropped where the user's own index tracks it.
   */
  private async stageWorkTree(git: Git, env: { GIT_INDEX_FILE: string }, excluded: string[]): Promise<string> {
    await git(['add', '--all', '--', ...includedPathspecs(await this.notIgnored(git, env, excluded))], { env });
    await git(['rm', '--cached', '-r', '-q', '-f', '--ignore-unmatch', '--', ...excludedPathspecs(excluded)], { env });
    return (await git(['write-tree'], { env })).trim();
  }

  /** Of the left-out paths, those `git add --all` would see: it fails on a pathspec naming an ignored path, even one that excludes it. */
  private async notIgnored(git: Git, env: { GIT_INDEX_FILE: string }, excluded: string[]): Promise<string[]> {
    if (excluded.length === 0) return [];
    const literal = excluded.map((path) => `:(literal)${path}`);
    // --directory: an untracked folder is one entry, however much it holds.
    const listed = (await git(['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--directory', '--', ...literal], { env })).split('\0');
    return excluded.filter((path) => listed.some((entry) => entry === path || entry.startsWith(`${path}/`)));
  }

  private async commitId(git: Git, id: string): Promise<string> {
    const commit = commitIdPattern.test(id) ? await this.commitOrNull(git, id) : null;
    if (commit === null) throw new Error(`${JSON.stringify(id)} is not the id of a commit in ${this.root}`);
    return commit;
  }

  private async commitOrNull(git: Git, revision: string): Promise<string | null> {
    const commit = (await git(['rev-parse', '--verify', '--quiet', `${revision}^{commit}`], { emptyOnExit: [1] })).trim();
    return commit === '' ? null : commit;
  }

}

function contains(folder: string, path: string): boolean {
  const inside = relative(folder, path);
  return inside === '' || (!inside.startsWith('..') && !isAbsolute(inside));
}

/** One file of a tree: its mode and its blob (or, for a submodule, its commit). */
interface TreeEntry {
  mode: string;
  object: string;
}

export interface UndoOptions {
  /** Where the work tree is captured before anything changes: a `reverted` checkpoint of this thread, named by this id (the revert's). */
  saveAs: { threadId: string; id: string };
  /** Revert the files changed since, too (they are in the saved tree). */
  force: boolean;
  maxFiles?: number;
}

export interface UndoResult {
  changes: FileChanges;
  saved: CapturedTree;
}

/** A conflict names at most this many files (and says how many there are). */
const MAX_LISTED_CONFLICTS = 100;
/** Paths per git command line when many files change at once. */
const ARGS_PER_CALL = 500;

const missing = /^0+$/;

const sameEntry = (a: TreeEntry | null | undefined, b: TreeEntry | null): boolean => (a ?? null) === null ? b === null : b !== null && a!.mode === b.mode && a!.object === b.object;

/** Reads `git diff --raw -z --no-renames`: `:<old mode> <new mode> <old object> <new object> <status>\0<path>\0` records. */
function parseRawDiff(output: string): Array<{ path: string; before: TreeEntry | null; after: TreeEntry | null }> {
  const fields = output.split('\0');
  const changes: Array<{ path: string; before: TreeEntry | null; after: TreeEntry | null }> = [];
  for (let at = 0; at + 1 < fields.length; at += 2) {
    const [oldMode = '', newMode = '', oldObject = '', newObject = ''] = fields[at]!.slice(1).split(' ');
    changes.push({
      path: fields[at + 1]!,
      before: missing.test(oldObject) ? null : { mode: oldMode, object: oldObject },
      after: missing.test(newObject) ? null : { mode: newMode, object: newObject },
    });
  }
  return changes;
}

/** Reads `git ls-tree -z`: `<mode> <type> <object>\t<path>` records. */
function parseTreeEntries(output: string): Array<{ mode: string; type: string; object: string; path: string }> {
  return output
    .split('\0')
    .filter((record) => record !== '')
    .map((record) => {
      const tab = record.indexOf('\t');
      const [mode = '', type = '', object = ''] = record.slice(0, tab).split(' ');
      return { mode, type, object, path: record.slice(tab + 1) };
    });
}
