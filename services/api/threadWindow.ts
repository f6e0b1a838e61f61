import { type ThreadView, type TurnView, TurnloomError, jsonBytes } from '../../domain/index.ts';
import { encodeCursor } from './paging.ts';

/**
 * A long thread is served as a window: the thread's head with its newest
 * turns (the open one always among them), as many as asked for and as fit
 * one answer. The window folds like the whole view (events only ever touch
 * the open turn), and older turns are paged with `thread.turns`.
 */
export interface ThreadWindow {
  thread: ThreadView;
  /** How many turns came before the window. */
  olderTurns: number;
  /** Where `thread.turns` continues; `null` when the window starts at the first turn. */
  olderCursor: string | null;
}

const tooLarge = (what: string, size: number, budget: number, details: Record<string, unknown>) =>
  new TurnloomError('unavailable', `${what} takes ${size} bytes, over the ${budget} bytes one answer may carry; fold it from thread.events { after: 0 } instead`, {
    size,
    limit: budget,
    ...details,
  });

/** Sizes already measured: a turn is a value (a change makes a new one), so each settled turn of a long thread is measured once, not on every read. */
const measured = new WeakMap<TurnView, number>();

function turnBytes(turn: TurnView): number {
  let size = measured.get(turn);
  if (size === undefined) {
    size = jsonBytes(turn) + jsonBytes(turn.id) + 2;
    measured.set(turn, size);
  }
  return size;
}

export function threadWindow(view: ThreadView, maxTurns: number, budget: number): ThreadWindow {
  const { turns, turnIds, ...head } = view;
  let bytes = jsonBytes({ ...head, turnIds: [], turns: {} });
  if (bytes > budget) throw tooLarge(`thread ${view.id} without its turns`, bytes, budget, { threadId: view.id });
  let first = turnIds.length;
  while (first > 0 && turnIds.length - first < maxTurns) {
    const size = turnBytes(turns[turnIds[first - 1]!]!);
    if (bytes + size > budget) break;
    bytes += size;
    first -= 1;
  }
  const openIndex = view.openTurnId === null ? -1 : turnIds.lastIndexOf(view.openTurnId);
  if (openIndex >= 0 && first > openIndex) {
    throw tooLarge(`thread ${view.id} with its open turn ${view.openTurnId}`, bytes + turnBytes(turns[view.openTurnId!]!), budget, { threadId: view.id, turnId: view.openTurnId });
  }
  const windowIds = turnIds.slice(first);
  return {
    thread: { ...head, turnIds: windowIds, turns: Object.fromEntries(windowIds.map((id) => [id, turns[id]!])) },
    olderTurns: first,
    olderCursor: first > 0 ? encodeCursor('turns', first) : null,
  };
}

/** Turns before position `before` (an index into the thread's turns), newest first, as many as fit. */
export function olderTurns(view: ThreadView, before: number, limit: number, budget: number): { turns: TurnView[]; olderCursor: string | null } {
  if (before > view.turnIds.length) throw new TurnloomError('invalid_payload', `cursor points past the thread's ${view.turnIds.length} turns`, { before });
  const page: TurnView[] = [];
  let bytes = 0;
  let next = before;
  while (next > 0 && page.length < limit) {
    const turn = view.turns[view.turnIds[next - 1]!]!;
    const size = turnBytes(turn);
    if (bytes + size > budget) {
      if (page.length === 0) throw tooLarge(`turn ${turn.id}`, size, budget, { threadId: view.id, turnId: turn.id });
      break;
    }
    page.push(turn);
    bytes += size;
    next -= 1;
  }
  return { turns: page, olderCursor: next > 0 ? encodeCursor('turns', next) : null };
}
