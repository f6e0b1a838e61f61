import type { TurnloomClient } from '../../client/index.ts';
import type { ThreadView, TurnView } from '../../domain/index.ts';

/** A thread as the API answers it, with every turn, oldest first: `thread.get`'s window, then `thread.turns` pages back to the first. */
export async function threadTurns(client: TurnloomClient, threadId: string): Promise<{ thread: ThreadView; turns: TurnView[] }> {
  const { thread, olderCursor } = await client.call('thread.get', { threadId, turns: 100 });
  const turns = thread.turnIds.map((turnId) => thread.turns[turnId]!);
  for (let before = olderCursor; before !== null; ) {
    // A page runs newest first, from just before the turns already had.
    const page = await client.call('thread.turns', { threadId, before, limit: 100 });
    turns.unshift(...page.turns.reverse());
    before = page.olderCursor;
  }
  return { thread, turns };
}
