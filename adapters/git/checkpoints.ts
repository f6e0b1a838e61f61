import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { capPatch } from './capPatch.ts';
import { checkpointRefName, checkpointRefPrefix, parseCheckpointRefName, threadRefPrefix, type Which } from './checkpointRefs.ts';
import { type CheckpointDiff, type FileChanges, type WorkspaceCheckpoints, summarizeChanges } from '../../domain/index.ts';
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
    try {
      return (await runGit({ cwd: dir }, ['rev-parse', '--show-toplevel'])).trim();
    } catch {
      return null;
    }
  }

  /** null when `dir` is not inside a git work tree (or git is missing). */
  static async open(dir: string, options: CheckpointsOptions = {}): Promise<Checkpoints | null> {
    const root = await Checkpoints.topLevel(dir);
    // A repository whose config (core.worktree) puts its work tree somewhere else is not this folder's.
    if (root === null || !contains(root, realpathSync(dir))) return null;
    const gitDir = (await runGit({ cwd: root }, ['rev-parse', '--absolute-git-dir'])).trim();
    const place = { cwd: root, repository: { gitDir, workTree: root } };
    // Linked worktrees keep their index under the main repository's git dir.
    const indexPath = resolve(root, (await runGit(place, ['rev-parse', '--git-path', 'index'])).trim());
    return new Checkpoints(root, place, indexPath, (options.exclude ?? []).map((folder) => resolve(folder)));
  }

  async capture(threadId: string, turnId: string, which: Which): Promise<CheckpointRef> {
    const ref = checkpointRefName(threadId, turnId, which);
    const git = await gitFor(this.place);
    const tree = await withTemporaryIndex(this.indexPath, async (env) => this.stageWorkTree(git, env, await this.excluded(git, env, { ignored: false })));
    const head = await this.commitOrNull(git, 'HEAD');
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
   * Makes the work tree equal to the snapshot, data folders aside (they stay
   * as they are, whatever the snapshot holds); returns the changes that took
   * (current state → snapshot).
   */
  async restore(commit: string, options: { maxFiles?: number } = {}): Promise<FileChanges> {
    const git = await gitFor(this.place);
    const target = await this.commitId(git, commit);
    return withTemporaryIndex(this.indexPath, async (env) => {
      // Ignored data folders count too: a snapshot from before the folder was ignored may hold its files.
      const excluded = await this.excluded(git, env, { ignored: true });
      const current = await this.stageWorkTree(git, env, excluded);
      const wanted = await this.treeWithout(git, target, excluded);
      const changes = parseFileChanges(await git([...plainDiff, ...fileChangeArgs, current, wanted]));
      // The temporary index now matches the work tree exactly, so a reset to the snapshot rewrites only the files
      // that differ (with their modes), deletes files the snapshot lacks along with the folders that leaves empty,
      // and never sees ignored files unless the snapshot has one at the same path. What is left out is in neither
      // tree, so the reset leaves it alone.
      await git(['read-tree', '--reset', '-u', wanted], { env });
      return summarizeChanges(changes, options.maxFiles ?? DEFAULT_MAX_FILES);
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

  /** The snapshot's tree without what is left out, nor a file where a left-out folder's parent is. */
  private async treeWithout(git: Git, commit: string, excluded: string[]): Promise<string> {
    return withTemporaryIndex(null, async (env) => {
      await git(['read-tree', commit], { env });
      const above = foldersAbove(excluded);
      const inTheWay = above.length === 0 ? [] : parseTreeEntries(await git(['--literal-pathspecs', 'ls-tree', '-z', commit, '--', ...above])).filter(({ type, path }) => type !== 'tree' && above.includes(path));
      await git(['rm', '--cached', '-r', '-q', '-f', '--ignore-unmatch', '--', ...excludedPathspecs(excluded), ...inTheWay.map(({ path }) => `:(literal)${path}`)], { env });
      return (await git(['write-tree'], { env })).trim();
    });
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

/** Reads `git ls-tree -z`: `<mode> <type> <object>\t<path>` records. */
function parseTreeEntries(output: string): Array<{ type: string; path: string }> {
  return output
    .split('\0')
    .filter((record) => record !== '')
    .map((record) => {
      const tab = record.indexOf('\t');
      return { type: record.slice(0, tab).split(' ')[1] ?? '', path: record.slice(tab + 1) };
    });
}
