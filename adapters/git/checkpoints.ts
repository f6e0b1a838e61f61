import { resolve } from 'node:path';
import { capPatch } from './capPatch.ts';
import { checkpointRefName, checkpointRefPrefix, parseCheckpointRefName, threadRefPrefix, type Which } from './checkpointRefs.ts';
import { type CheckpointDiff, type FileChanges, type WorkspaceCheckpoints, summarizeChanges } from '../../domain/index.ts';
import { candidatePathspecs, excludedPathspecs, excludedPaths, foldersAbove, includedPathspecs } from './dataFolders.ts';
import { fileChangeArgs, parseFileChanges } from './fileChanges.ts';
import { runGit, type GitOptions } from './runGit.ts';
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
    private readonly indexPath: string,
    private readonly excludedFolders: readonly string[],
  ) {}

  /** null when `dir` is not inside a git work tree (or git is missing). */
  /** The top folder of the git work tree `dir` is in; `null` when it is in none (or git is missing). */
  static async topLevel(dir: string): Promise<string | null> {
    try {
      return (await runGit(dir, ['rev-parse', '--show-toplevel'])).trim();
    } catch {
      return null;
    }
  }

  static async open(dir: string, options: CheckpointsOptions = {}): Promise<Checkpoints | null> {
    const root = await Checkpoints.topLevel(dir);
    if (root === null) return null;
    // Linked worktrees keep their index under the main repository's git dir.
    const indexPath = resolve(root, (await runGit(root, ['rev-parse', '--git-path', 'index'])).trim());
    return new Checkpoints(root, indexPath, (options.exclude ?? []).map((folder) => resolve(folder)));
  }

  async capture(threadId: string, turnId: string, which: Which): Promise<CheckpointRef> {
    const ref = checkpointRefName(threadId, turnId, which);
    const tree = await withTemporaryIndex(this.indexPath, async (env) => this.stageWorkTree(env, await this.excluded(env, { ignored: false })));
    const head = await this.commitOrNull('HEAD');
    const parent = head === null ? [] : ['-p', head];
    // Quoted: ids may hold spaces, newlines or NUL, which an argv string cannot carry.
    const message = `turnloom checkpoint ${JSON.stringify(threadId)} ${JSON.stringify(turnId)} ${which}`;
    const commit = (await this.git(['commit-tree', '--no-gpg-sign', ...parent, '-m', message, tree], { env: identity })).trim();
    await this.git(['update-ref', ref, commit]);
    return { threadId, turnId, which, ref, commit };
  }

  /** Sorted by ref name; every thread's when threadId is omitted. */
  async list(threadId?: string): Promise<CheckpointRef[]> {
    const prefix = threadId === undefined ? checkpointRefPrefix : threadRefPrefix(threadId);
    const output = await this.git(['for-each-ref', '--sort=refname', '--format=%(refname)%00%(objectname)', prefix]);
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
    const [fromCommit, toCommit] = await Promise.all([this.commitId(from), this.commitId(to)]);
    const pathspec = options.path === undefined ? [] : ['--', options.path];
    const [summary, patch] = await Promise.all([
      this.git([...plainDiff, ...fileChangeArgs, fromCommit, toCommit, ...pathspec]),
      this.git([...plainDiff, fromCommit, toCommit, ...pathspec]),
    ]);
    return { ...summarizeChanges(parseFileChanges(summary), options.maxFiles ?? DEFAULT_MAX_FILES), ...capPatch(patch, options.maxChars ?? 100_000) };
  }

  /**
   * Makes the work tree equal to the snapshot, data folders aside (they stay
   * as they are, whatever the snapshot holds); returns the changes that took
   * (current state → snapshot).
   */
  async restore(commit: string, options: { maxFiles?: number } = {}): Promise<FileChanges> {
    const target = await this.commitId(commit);
    return withTemporaryIndex(this.indexPath, async (env) => {
      // Ignored data folders count too: a snapshot from before the folder was ignored may hold its files.
      const excluded = await this.excluded(env, { ignored: true });
      const current = await this.stageWorkTree(env, excluded);
      const wanted = await this.treeWithout(target, excluded);
      const changes = parseFileChanges(await this.git([...plainDiff, ...fileChangeArgs, current, wanted]));
      // The temporary index now matches the work tree exactly, so a reset to the snapshot rewrites only the files
      // that differ (with their modes), deletes files the snapshot lacks along with the folders that leaves empty,
      // and never sees ignored files unless the snapshot has one at the same path. What is left out is in neither
      // tree, so the reset leaves it alone.
      await this.git(['read-tree', '--reset', '-u', wanted], { env });
      return summarizeChanges(changes, options.maxFiles ?? DEFAULT_MAX_FILES);
    });
  }

  /** What to leave out of `env`'s view of the work tree (see `dataFolders.ts`); `ignored`: look inside ignored folders too. */
  private async excluded(env: { GIT_INDEX_FILE: string }, { ignored }: { ignored: boolean }): Promise<string[]> {
    const listing = await this.git(['ls-files', '-z', '--cached', '--others', ...(ignored ? [] : ['--exclude-standard']), '--', ...candidatePathspecs], { env });
    return excludedPaths(this.root, listing, this.excludedFolders);
  }

  /**
   * Stages the whole work tree (untracked included, ignored excluded, deletions dropped) into `env`'s index,
   * without what is left out: never read from disk, and dropped where the user's own index tracks it.
   */
  private async stageWorkTree(env: { GIT_INDEX_FILE: string }, excluded: string[]): Promise<string> {
    await this.git(['add', '--all', '--', ...includedPathspecs(await this.notIgnored(env, excluded))], { env });
    await this.git(['rm', '--cached', '-r', '-q', '-f', '--ignore-unmatch', '--', ...excludedPathspecs(excluded)], { env });
    return (await this.git(['write-tree'], { env })).trim();
  }

  /** Of the left-out paths, those `git add --all` would see: it fails on a pathspec naming an ignored path, even one that excludes it. */
  private async notIgnored(env: { GIT_INDEX_FILE: string }, excluded: string[]): Promise<string[]> {
    if (excluded.length === 0) return [];
    const literal = excluded.map((path) => `:(literal)${path}`);
    // --directory: an untracked folder is one entry, however much it holds.
    const listed = (await this.git(['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--directory', '--', ...literal], { env })).split('\0');
    return excluded.filter((path) => listed.some((entry) => entry === path || entry.startsWith(`${path}/`)));
  }

  /** The snapshot's tree without what is left out, nor a file where a left-out folder's parent is. */
  private async treeWithout(commit: string, excluded: string[]): Promise<string> {
    return withTemporaryIndex(null, async (env) => {
      await this.git(['read-tree', commit], { env });
      const above = foldersAbove(excluded);
      const inTheWay = above.length === 0 ? [] : parseTreeEntries(await this.git(['--literal-pathspecs', 'ls-tree', '-z', commit, '--', ...above])).filter(({ type, path }) => type !== 'tree' && above.includes(path));
      await this.git(['rm', '--cached', '-r', '-q', '-f', '--ignore-unmatch', '--', ...excludedPathspecs(excluded), ...inTheWay.map(({ path }) => `:(literal)${path}`)], { env });
      return (await this.git(['write-tree'], { env })).trim();
    });
  }

  private async commitId(id: string): Promise<string> {
    const commit = commitIdPattern.test(id) ? await this.commitOrNull(id) : null;
    if (commit === null) throw new Error(`${JSON.stringify(id)} is not the id of a commit in ${this.root}`);
    return commit;
  }

  private async commitOrNull(revision: string): Promise<string | null> {
    const commit = (await this.git(['rev-parse', '--verify', '--quiet', `${revision}^{commit}`], { emptyOnExit: [1] })).trim();
    return commit === '' ? null : commit;
  }

  private git(args: string[], options: GitOptions = {}): Promise<string> {
    return runGit(this.root, args, options);
  }
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
