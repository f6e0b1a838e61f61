/**
 * Where a thread's log stands, as far as its structural rules care: the last
 * sequence, the open turn, the open step, and the parts and tool calls of that
 * step. Kept in the read model so every commit can be checked against it.
 */
export interface LogCursor {
  threadSeq: number;
  openTurnId: string | null;
  openStep: number | null;
  /** The highest step number the open turn has used. */
  lastStep: number;
  /** Parts of the open step that have not settled. */
  openParts: string[];
  /** Tool calls made in the open step. */
  stepToolCalls: string[];
}

export const emptyCursor = (): LogCursor => ({
  threadSeq: 0,
  openTurnId: null,
  openStep: null,
  lastStep: 0,
  openParts: [],
  stepToolCalls: [],
});
