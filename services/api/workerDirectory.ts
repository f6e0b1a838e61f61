import type { CapturedTree, FileChanges, RevertedTurn } from '../../domain/index.ts';
import type { WorkerInfo } from '../../protocol/apiResults.ts';

/** What the API needs of the engine's side of the worker protocol: who is there, and work done on a workspace. */
export interface WorkerDirectory {
  workers(): WorkerInfo[];
  liveWorkers(environment: string): number;
  /** Throws `overloaded` when more turns wait for a worker's slot than the engine lets wait: a new turn would only add to them. */
  admitTurn(): void;
  /** Has a worker of the environment undo what a revert's turns changed; answers what changed and where the tree before it was saved. */
  revert(environment: string, task: { threadId: string; revertId: string; turns: RevertedTurn[]; force: boolean }): Promise<{ changes: FileChanges; saved: CapturedTree }>;
}
