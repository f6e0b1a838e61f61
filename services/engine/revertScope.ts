import { type RevertedTurn, type ThreadView, TurnloomError } from '../../domain/index.ts';

/** What a revert of one turn covers: that turn and every later one still standing, and the changes each made. */
export interface RevertScope {
  /** The checkpoint before the first of them: where the files those turns changed go back to. */
  commit: string;
  turnIds: string[];
  /** Those that changed files, each with its checkpoints before and after. */
  turns: RevertedTurn[];
}

/**
 * What undoing a turn means: what it changed, and what every later turn
 * still standing changed, goes back to how it was before them; nothing
 * else is touched. Only while no turn is open and no other revert runs: a
 * turn would write over the files being put back.
 */
export function revertScope(view: ThreadView, turnId: string): RevertScope {
  if (view.openTurnId) throw new TurnloomError('conflict', `turn ${view.openTurnId} is open: interrupt it or let it end before reverting`, { openTurnId: view.openTurnId });
  if (view.revert) throw new TurnloomError('conflict', `a revert of turn ${view.revert.turnIds[0]} is under way; wait for it to end`, { revertId: view.revert.revertId });
  const turn = view.turns[turnId];
  if (!turn) throw new TurnloomError('not_found', `no turn ${turnId} in thread ${view.id}`, { turnId });
  if (turn.revertedAt !== null) throw new TurnloomError('conflict', `turn ${turnId} was already reverted (at seq ${turn.revertedAt})`, { turnId, revertedAt: turn.revertedAt });
  const before = turn.checkpoint?.before;
  if (!before) throw new TurnloomError('not_found', `turn ${turnId} has no checkpoint: it changed no files, or its workspace keeps none`, { turnId });
  const turnIds = view.turnIds.slice(view.turnIds.indexOf(turnId)).filter((id) => view.turns[id]?.revertedAt === null);
  const turns: RevertedTurn[] = [];
  for (const id of turnIds) {
    const checkpoint = view.turns[id]!.checkpoint;
    if (!checkpoint?.before) continue;
    // Without the tree it left, what it changed is unknown: undoing it could throw away work nobody can tell apart.
    if (!checkpoint.after) throw new TurnloomError('conflict', `turn ${id} has no checkpoint after it, so what it changed is unknown; it cannot be reverted`, { turnId: id });
    turns.push({ turnId: id, before: checkpoint.before.commit, after: checkpoint.after.commit });
  }
  return { commit: before.commit, turnIds, turns };
}
