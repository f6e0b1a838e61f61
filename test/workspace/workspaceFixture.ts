import { Checkpoints } from '../../adapters/git/index.ts';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import { WorkspaceTools } from '../../adapters/tools/index.ts';
import type { TurnloomClient } from '../../client/index.ts';
import type { ProviderRequest, TurnView } from '../../domain/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { type TestRepo, makeRepo } from '../git/gitRepoFixture.ts';

export interface WorkspaceFixture {
  fx: ApiFixture;
  client: TurnloomClient;
  repo: TestRepo;
  /** Every request the scripted model was sent, in order. */
  requests: ProviderRequest[];
  turn(threadId: string, turnId: string): Promise<TurnView>;
  /** Starts a turn and waits until it settles (approvals are the test's to answer meanwhile). */
  settled(threadId: string, turnId: string): Promise<TurnView>;
  dispose(): Promise<void>;
}

/**
 * An engine with a local worker whose workspace is a real folder (a git
 * repository unless `git` is false): real tools, real checkpoints, and the
 * scripted model playing `script` for each turn, whose steps are counted per turn.
 */
export async function openWorkspaceFixture(script: (request: ProviderRequest) => ScriptInput, options: { git?: boolean; natsUrl?: string } = {}): Promise<WorkspaceFixture> {
  const repo = makeRepo(options.git ?? true);
  if (options.git ?? true) {
    repo.write('a.txt', 'first line\n');
    repo.git('add', '-A');
    repo.git('commit', '-q', '-m', 'base');
  }
  const store = await Checkpoints.open(repo.path);
  const requests: ProviderRequest[] = [];
  const provider = new ScriptedProvider((request) => {
    requests.push(request);
    return script(request);
  });
  const fx = await openApiFixture({
    ...(options.natsUrl ? { natsUrl: options.natsUrl } : {}),
    providers: { scripted: provider },
    interruptDeadlineMs: 5_000,
    localWorker: {
      workspace: repo.path,
      tools: new WorkspaceTools({ root: repo.path }),
      checkpoints: store ? { store } : { off: `${repo.path} is not a git repository` },
    },
  });
  const client = await fx.client();
  const turn = async (threadId: string, turnId: string) => (await client.call('thread.get', { threadId })).thread.turns[turnId]!;
  return {
    fx,
    client,
    repo,
    requests,
    turn,
    settled: async (threadId, turnId) => {
      for (;;) {
        const current = await turn(threadId, turnId);
        if (['completed', 'failed', 'interrupted'].includes(current.state)) return current;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    dispose: async () => {
      await fx.dispose();
      repo.remove();
    },
  };
}

/** The step of the current turn a request is for: assistant messages since the last user message. */
export function stepOf(request: ProviderRequest): number {
  let step = 0;
  for (let i = request.messages.length - 1; i >= 0 && request.messages[i]!.role !== 'user'; i--) if (request.messages[i]!.role === 'assistant') step += 1;
  return step;
}

/** A script that makes `calls` (one per step), then says `done`. */
export const toolSteps =
  (...calls: Array<{ name: string; input: Record<string, unknown> }>) =>
  (request: ProviderRequest): ScriptInput => {
    const step = stepOf(request);
    const call = calls[step];
    return { steps: [call ? [{ toolCall: call }] : [{ text: 'done' }]] };
  };
