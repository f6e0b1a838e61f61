import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { type Logger, errorFields, silentLogger } from '../../domain/index.ts';
import { systemCommandId } from '../engine/commands.ts';
import type { Engine } from '../engine/engine.ts';
import { machinesVersion } from '../engine/machinesVersion.ts';
import { isHandOverState } from '../engine/settleTurn.ts';

export interface CrashRepairOptions {
  /** Whether a live worker still holds an open turn found at start. Default: none does (they ran in the process that died). */
  hasLiveWorker?: (threadId: string, turnId: string) => boolean | Promise<boolean>;
  /** Threads repaired at once. */
  concurrency?: number;
  /** In a cluster: whether this engine owns the thread (only its owner repairs it). */
  owns?: (threadId: string) => boolean;
  /** Whether this process is running that revert (so none of its own is taken for one a dead process left). */
  runs?: (revertId: string) => boolean;
  log?: Logger;
}

/**
 * Settles the turns a dead process left open that nothing else will: a turn
 * mid-step that no worker holds a lease on (a lease has its own clock, in the
 * worker gateway, and a lost one is resumed). It runs as a reactor beside the
 * API, once the event publishers are attached and the API serves, so its
 * events reach every watching client like any others, and a long list of
 * open turns does not hold the server's start. A turn still `requested`, or
 * between steps, waits for a worker; the rest are interrupted with cause
 * `repair` (see `turn.repair`).
 */
export class CrashRepair {
  private stopped = false;
  private get log(): Logger {
    return this.options.log ?? silentLogger;
  }

  constructor(
    private readonly engine: Engine,
    private readonly options: CrashRepairOptions = {},
  ) {}

  /** Resolves with the number of turns repaired; one that cannot be is logged and stays open. Reverts the dead process left running are ended too. */
  async run(): Promise<number> {
    await this.endReverts();
    const queue = this.engine.listOpenTurns().filter(({ threadId }) => this.owns(threadId));
    let repaired = 0;
    const lane = async () => {
      for (let next = queue.shift(); next && !this.stopped; next = queue.shift()) {
        // Each repair is a burst of work on the main thread: let what waits (API requests first) go in between.
        await yieldToOthers();
        if (await this.repair(next.threadId, next.turnId)) repaired += 1;
      }
    };
    await Promise.all(Array.from({ length: this.options.concurrency ?? 16 }, lane));
    return repaired;
  }

  /**
   * A revert runs in the process that serves the API: one found open at
   * start died with it. Its end is recorded, saying the files may be partly
   * put back and where the tree before it would be, so the thread is free.
   */
  private async endReverts(): Promise<void> {
    for (const { threadId, revertId } of this.engine.listOpenReverts()) {
      if (this.stopped) return;
      if (this.owns(threadId)) await this.endRevert(threadId, revertId);
    }
  }

  private owns(threadId: string): boolean {
    return this.options.owns?.(threadId) ?? true;
  }

  /**
   * Settles what a thread this engine of a cluster just took was left with
   * by the engine that died: a revert it was running, and an open turn
   * nobody holds that cannot wait for a worker.
   */
  async adopt(threadId: string): Promise<void> {
    const revert = this.engine.listOpenReverts().find((open) => open.threadId === threadId);
    // One this process still runs (it took back its own thread, or read it again) is left to finish.
    if (revert && !this.options.runs?.(revert.revertId)) await this.endRevert(threadId, revert.revertId);
    const turnId = this.engine.summary(threadId)?.openTurnId;
    if (turnId) await this.repair(threadId, turnId);
  }

  private async endRevert(threadId: string, revertId: string): Promise<void> {
    await this.engine
      .submit({
        type: 'checkpoint.abandonRevert',
        commandId: systemCommandId('revertFailed', threadId, revertId),
        threadId,
        revertId,
        reason: `the process running revert ${revertId} stopped; its files may be partly put back (the work tree from before it, if it was saved, is the checkpoint named after the revert, under refs/turnloom)`,
        conflicts: [],
        saved: null,
      })
      .catch((error: unknown) => {
        if (!this.stopped) this.log.error({ ...errorFields(error), threadId, revertId }, 'could not end a revert a dead process left');
      });
  }

  private async repair(threadId: string, turnId: string): Promise<boolean> {
    try {
      const turn = this.engine.readTurn(threadId, turnId);
      // Waiting for a worker (not started, between steps, or with tool calls to run after losing one) is not broken; a lease has its own clock.
      if (!turn || isHandOverState(turn) || turn.lease) return false;
      if (await this.options.hasLiveWorker?.(threadId, turnId)) return false;
      await this.engine.submit({
        type: 'turn.repair',
        // Keyed by machine version too: a repair refused by older rules is tried again by newer ones.
        commandId: systemCommandId('repair', machinesVersion, threadId, turnId),
        threadId,
        turnId,
        reason: 'the process running this turn stopped and no worker holds it',
      });
      this.log.warn({ threadId, turnId }, 'repaired a turn a dead process left open');
      return true;
    } catch (error) {
      // One thread that cannot be repaired must not keep the others from it.
      if (!this.stopped) this.log.error({ ...errorFields(error), threadId, turnId }, 'could not repair a turn; it stays open');
      return false;
    }
  }

  /** Stops taking more threads; the one in flight finishes. */
  stop(): void {
    this.stopped = true;
  }
}
