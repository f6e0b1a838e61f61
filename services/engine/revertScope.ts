import { type ThreadView, TurnloomError } from '../../domain/index.ts';

/**
 * What undoing a turn means: the work tree goes back to the checkpoint taken
 * before that turn's first change, so that turn and every later one still
 * standing are undone. Only between turns: a running turn would write over
 * the restored files.
 */
export function revertScope(view: ThreadView, turnId: string): { commit: string; turnIds: string[] } {
  if (view.openTurnId) throw new TurnloomError('conflict', `turn ${view.openTurnId} is open: interrupt it or let it end before reverting`, { openTurnId: view.openTurnId });
  const turn = view.turns[turnId];
  if (!turn) throw new TurnloomError('not_found', `no turn ${turnId} in thread ${view.id}`, { turnId });
  if (turn.revertedAt !== null) throw new TurnloomError('conflict', `turn ${turnId} was already reverted (at seq ${turn.revertedAt})`, { turnId, revertedAt: turn.revertedAt });
  const before = turn.checkpoint?.before;
  if (!before) throw new TurnloomError('not_found', `turn ${turnId} has no checkpoint: it changed no files, or its workspace keeps none`, { turnId });
  const turnIds = view.turnIds.slice(view.turnIds.indexOf(turnId)).filter((id) => view.turns[id]?.revertedAt === null);
  return { commit: before.commit, turnIds };
}
