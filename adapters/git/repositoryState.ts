import { gitFor, runGit } from './runGit.ts';

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
  let root: string;
  try {
    root = (await runGit({ cwd }, ['rev-parse', '--show-toplevel'])).trim();
  } catch {
    return null;
  }
  const git = await gitFor({ cwd: root }).catch(() => null);
  // The branch and the status read the repository side by side: a turn's first model call waits for both.
  const [branchName, statusText] = await Promise.all([
    git?.(['symbolic-ref', '--quiet', '--short', 'HEAD'], { emptyOnExit: [1, 128] }).catch(() => '') ?? '',
    git?.(['status', '--porcelain=v1', '--untracked-files=normal']).catch(() => '') ?? '',
  ]);
  const branch = branchName.trim() || null;
  const lines = statusText.split('\n').filter((line) => line.length > 0);
  let status = lines.slice(0, MAX_STATUS_LINES).join('\n');
  if (status.length > MAX_STATUS_CHARS) status = `${status.slice(0, MAX_STATUS_CHARS)}…`;
  if (lines.length > MAX_STATUS_LINES) status += `\n… and ${lines.length - MAX_STATUS_LINES} more changed files`;
  return { root, branch, status };
}
