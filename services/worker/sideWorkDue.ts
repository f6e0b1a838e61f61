import type { CheckpointDiff, SideTaskKind, ThreadView, TurnView } from '../../domain/index.ts';

/** One piece of side work due after a turn, with what its model call is about. */
export interface SideTask {
  kind: SideTaskKind;
  /** The completed turn it is done for. */
  turnId: string;
  /** The user's first prompt (for a title) or the turn's diff (for a summary), whole: the request cuts it to size. */
  input: string;
}

/** The input the turn was asked with; input steered in later follows it in the same message. */
const promptOf = (turn: TurnView): string => turn.messages[0].parts[0]?.text ?? '';

const statusMark = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' } as const;

/** The files first (the patch may be cut), then the patch. */
function diffText(diff: CheckpointDiff): string {
  const files = diff.files.map((file) => `${statusMark[file.status]} ${file.oldPath ? `${file.oldPath} -> ` : ''}${file.path}${file.binary ? ' (binary)' : ` +${file.additions} -${file.deletions}`}`);
  // A cut list still says how large the change is, first (the request keeps only the start): its first files alone would make an `npm install` look small.
  const heading = diff.filesOmitted > 0 ? `Files changed: ${diff.filesChanged}, +${diff.additions} -${diff.deletions} in all; the first ${diff.files.length} are` : 'Files changed';
  return `${heading}:\n${files.join('\n')}\n\n${diff.patch}`;
}

/**
 * What side work a turn calls for once it settled, from the thread as its
 * log says: a title after the thread's first completed turn, while the
 * thread keeps the title it was created with; a summary of a completed turn
 * whose checkpoint holds changes. Nothing after a turn that did not complete.
 */
export function sideWorkDue(view: ThreadView, turnId: string): SideTask[] {
  const turn = view.turns[turnId];
  if (turn?.state !== 'completed') return [];
  const tasks: SideTask[] = [];
  const firstCompleted = view.turnIds.every((id) => id === turnId || view.turns[id]?.state !== 'completed');
  const opening = view.turns[view.turnIds[0] ?? turnId] ?? turn;
  if (firstCompleted && view.renamedAt === null) tasks.push({ kind: 'title', turnId, input: promptOf(opening) });
  const diff = turn.checkpoint?.diff;
  if (diff && diff.filesChanged > 0 && turn.summary === null) tasks.push({ kind: 'summary', turnId, input: diffText(diff) });
  return tasks;
}
