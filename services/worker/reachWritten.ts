import type { TurnWork } from './turnWork.ts';

/** Waits until everything written so far is durable and back in the fold, so what is read next is what the log says. */
export async function reachWritten(work: TurnWork): Promise<void> {
  await work.outbox.flushed();
  await work.fold.reach(work.outbox.lastSeq);
}
