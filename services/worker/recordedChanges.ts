import { type CapturedTree, type CheckpointDiff, type FileChanges, type WorkspaceCheckpoints, fitChanges } from '../../domain/index.ts';
import type { RevertTask } from '../dispatch/workerProtocol.ts';

/*
 * The log keeps what each turn and each revert changed, so anyone can read it
 * without the workspace; one `npm install` changes tens of thousands of files.
 * What is recorded lists the first files, totals them all, and fits in one
 * event with room to spare: under the engine's default event limit (508 KiB)
 * and NATS's default message size (1 MiB). An engine with a smaller limit
 * cuts it further the same way.
 */
const MAX_LISTED_FILES = 1_000;
const MAX_PATCH_CHARS = 200_000;
const MAX_RECORDED_BYTES = 384 * 1024;

/** A turn's diff, from its `before` checkpoint to its `after` one, as the log keeps it. */
export async function diffToRecord(store: WorkspaceCheckpoints, from: string, to: string): Promise<CheckpointDiff> {
  return fitChanges(await store.diff(from, to, { maxChars: MAX_PATCH_CHARS, maxFiles: MAX_LISTED_FILES }), MAX_RECORDED_BYTES);
}

/** Undoes what a revert's turns changed; answers what that changed (as the log keeps it) and where the tree before it was saved. */
export async function undoToRecord(store: WorkspaceCheckpoints, task: RevertTask): Promise<{ changes: FileChanges; saved: CapturedTree }> {
  const { changes, saved } = await store.undo(task.turns, { saveAs: { threadId: task.threadId, id: task.revertId }, force: task.force, maxFiles: MAX_LISTED_FILES });
  return { changes: fitChanges(changes, MAX_RECORDED_BYTES), saved };
}
