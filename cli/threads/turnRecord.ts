import type { FileChange, TurnView, Usage } from '../../domain/index.ts';
import type { TurnRequest } from './turnRequests.ts';

/** One turn as `show` reports it (and `--json` prints it): what was asked, what the agent did and answered, what it changed. */
export interface TurnRecord {
  id: string;
  /** 1 for the thread's first turn. */
  number: number;
  state: string;
  /** The user's message: its input, then any input steered in while it ran. */
  input: string;
  text: string;
  toolCalls: Array<{ name: string; input: unknown; state: string; output: string | null; error: string | null }>;
  /** `decision`: what came of it (`allowed`, `denied`, `pending`, `expired`, `cancelled`), which `state` no longer says once the provider acted on it. */
  approvals: Array<{ toolName: string; kind: string; subject: string; state: string; decision: string; decidedBy: string | null; note: string | null }>;
  /** What it changed in the work tree, when it changed anything there (`null`: nothing, or no checkpoints). */
  changes: { files: Array<Pick<FileChange, 'path' | 'status' | 'additions' | 'deletions'>>; filesChanged: number; additions: number; deletions: number; filesOmitted: number } | null;
  /** Whether a revert (`undo`) has put its changes back. */
  undone: boolean;
  summary: string | null;
  error: string | null;
  usage: Usage;
  requestedAt: string;
  endedAt: string | null;
  /** With `--request`: the context and headers its model calls were sent. */
  request?: TurnRequest;
}

export function turnRecord(turn: TurnView, number: number, request?: TurnRequest): TurnRecord {
  const [asked, answer] = turn.messages;
  const diff = turn.checkpoint?.diff ?? null;
  return {
    id: turn.id,
    number,
    state: turn.state,
    input: asked.parts.map((part) => part.text).join('\n\n'),
    text: answer.parts.filter((part) => part.kind === 'text').map((part) => part.text).join('\n\n'),
    toolCalls: answer.parts.flatMap((part) => (part.tool ? [{ name: part.tool.name, input: part.tool.input, state: part.state, output: part.tool.output, error: part.error }] : [])),
    approvals: turn.approvals.map(({ toolName, kind, subject, state, decidedBy, note, partId }) => ({ toolName, kind, subject, state, decision: decisionOf(state, answer.parts.find((part) => part.id === partId)?.error ?? null), decidedBy, note })),
    changes:
      diff && diff.filesChanged > 0
        ? { files: diff.files.map(({ path, status, additions, deletions }) => ({ path, status, additions, deletions })), filesChanged: diff.filesChanged, additions: diff.additions, deletions: diff.deletions, filesOmitted: diff.filesOmitted }
        : null,
    undone: turn.revertedAt !== null,
    summary: turn.summary,
    error: turn.error,
    usage: turn.usage,
    requestedAt: new Date(turn.requestedAt).toISOString(),
    endedAt: turn.endedAt === null ? null : new Date(turn.endedAt).toISOString(),
    ...(request ? { request } : {}),
  };
}

/** What came of an approval: its state says so until the provider acted on the decision (`consumed`); then the call's error says whether it was denied. */
function decisionOf(state: string, callError: string | null): string {
  if (state !== 'consumed') return state === 'approved' ? 'allowed' : state;
  return callError?.startsWith('denied by ') ? 'denied' : 'allowed';
}
