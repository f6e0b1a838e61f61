import { gitFor } from './runGit.ts';

/** What the model is told of a workspace's repository: where its root is, the branch, and a bounded `git status`. */
export interface RepositoryState {
  root: string;
  branch: string | null;
  status: string;
}

const MAX_STATUS_LINES = 40;
const MAX_STATUS_CHARS = 4_000;

/** The repository `cwd` is in, or `null` when it is in none (or git is missing). Runs git as every turnloom git runs: none of the repository's code. */
export async function repositoryState(cwd: string): Promise<RepositoryState | null> {
  // The root, the branch and the status are read side by side, after one config read: a turn's first model call waits for them. Run
  // from `cwd` (not the root, which the first gives): a repository's config is the same from any of its folders, and porcelain paths are the root's.
  const git = await gitFor({ cwd }).catch(() => null);
  if (git === null) return null;
  const [root, branchName, statusText] = await Promise.all([
    git(['rev-parse', '--show-toplevel']).then(
      (out) => out.trim(),
      () => null,
    ),
    git(['symbolic-ref', '--quiet', '--short', 'HEAD'], { emptyOnExit: [1, 128] }).catch(() => ''),
    git(['status', '--porcelain=v1', '--untracked-files=normal']).catch(() => ''),
  ]);
  if (root === null) return null;
  const branch = branchName.trim() || null;
  const lines = statusText.split('\n').filter((line) => line.length > 0);
  let status = lines.slice(0, MAX_STATUS_LINES).join('\n');
  if (status.length > MAX_STATUS_CHARS) status = `${status.slice(0, MAX_STATUS_CHARS)}…`;
  if (lines.length > MAX_STATUS_LINES) status += `\n… and ${lines.length - MAX_STATUS_LINES} more changed files`;
  return { root, branch, status };
}
