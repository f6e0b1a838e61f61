import { type DomainEventOf, TurnloomError } from '../../domain/index.ts';
import { systemCommandId } from '../engine/commands.ts';
import type { Engine } from '../engine/engine.ts';
import type { RevertResult } from '../../protocol/apiResults.ts';
import type { WorkerDirectory } from './workerDirectory.ts';

type RevertStarted = DomainEventOf<'checkpoint.revertStarted'>;

/**
 * A revert, once the log holds its start (which holds the thread: no turn
 * begins until it ends): one worker of the thread's environment undoes the
 * turns' changes, and the log records how it ended, done or not, so the
 * thread is free again and what the files went through is always said.
 * A retry of the same command finds the same revert, running or ended.
 */
export async function runRevert(engine: Engine, workers: WorkerDirectory, threadId: string, started: RevertStarted, force: boolean): Promise<RevertResult> {
  const { revertId } = started;
  const view = await engine.getThread(threadId);
  if (view.revert?.revertId !== revertId) return revertEnded(engine, threadId, revertId);
  let answer: Awaited<ReturnType<WorkerDirectory['revert']>>;
  try {
    answer = await workers.revert(view.environment, { threadId, revertId, turns: started.turns, force });
  } catch (error) {
    const details = error instanceof TurnloomError ? error.details : {};
    await engine
      .submit({
        type: 'checkpoint.abandonRevert',
        commandId: systemCommandId('revertFailed', threadId, revertId),
        threadId,
        revertId,
        reason: error instanceof Error ? error.message : String(error),
        conflicts: Array.isArray(details.files) ? (details.files as string[]) : [],
        saved: null,
      })
      // Ended meanwhile by a retry of the same command: its end stands.
      .catch((ending: unknown) => {
        if (!(ending instanceof TurnloomError && ending.code === 'conflict')) throw ending;
      });
    throw error;
  }
  const done = await engine.submit({ type: 'checkpoint.finishRevert', commandId: systemCommandId('reverted', threadId, revertId), threadId, revertId, changes: answer.changes, saved: answer.saved });
  return { ...done, revertId, ...answer.changes, saved: answer.saved };
}

/** How a revert that already ended ended, read from the log: its result, or the error that ended it. */
async function revertEnded(engine: Engine, threadId: string, revertId: string): Promise<RevertResult> {
  for (let after = 0; ; ) {
    const events = engine.readEvents(threadId, after, 1_000);
    if (events.length === 0) break;
    for (const { event, commandId, threadSeq } of events) {
      if (event.type === 'checkpoint.reverted' && event.revertId === revertId) {
        const { files, filesChanged, additions, deletions, filesOmitted } = event;
        return { commandId, threadId, fromThreadSeq: threadSeq, toThreadSeq: threadSeq, diagnostics: 0, refused: [], revertId, files, filesChanged, additions, deletions, filesOmitted, saved: event.saved! };
      }
      if (event.type === 'checkpoint.revertFailed' && event.revertId === revertId) {
        throw new TurnloomError('conflict', `revert ${revertId} did not happen: ${event.reason}`, { revertId, files: event.conflicts });
      }
    }
    after = events.at(-1)!.threadSeq;
  }
  throw new TurnloomError('not_found', `revert ${revertId} is not in thread ${threadId}`, { revertId });
}
