import { repositoryState } from '../../adapters/git/index.ts';
import { projectInstructions } from '../../adapters/workspace/index.ts';
import type { ProviderChoice, RequestContext } from '../../domain/index.ts';

/** `YYYY-MM-DD` in this machine's time zone: the day the user is living in. */
function localDate(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

/**
 * What a turn's prompt is built from, as this worker sees it when the turn
 * starts: its workspace, the repository it is in, the project's
 * instructions, the agent and the model. Recorded as `request.context`.
 */
export async function snapshotContext(options: { workspace: string | null; userInstructions: string | null; agent: string; provider: ProviderChoice; now?: Date }): Promise<RequestContext> {
  const { workspace, agent, provider } = options;
  const repository = workspace ? await repositoryState(workspace) : null;
  const instructions = workspace ? await projectInstructions({ workspace, repositoryRoot: repository?.root ?? null, userFile: options.userInstructions }) : [];
  return {
    agent,
    workspace,
    platform: process.platform,
    date: localDate(options.now ?? new Date()),
    git: repository ? { branch: repository.branch, status: repository.status } : null,
    provider: provider.name,
    model: provider.model,
    instructions,
  };
}
