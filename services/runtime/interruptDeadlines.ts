import type { Engine } from '../engine/engine.ts';
import { TurnloomError } from '../errors.ts';

/**
 * Settles an interrupt nobody confirms. When `turn.interruptRequested` is
 * committed a timer starts; if the turn is still open when it fires (the
 * worker died, hangs, or never existed), the turn is settled with cause
 * `deadline`. Deadlines live here, outside the machines, and are re-armed on
 * start for turns already interrupting, because XState would not re-arm them.
 */
export class InterruptDeadlines {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly deadlineMs: number,
  ) {}

  async start(): Promise<this> {
    this.unsubscribe = this.engine.onCommitted((events) => {
      for (const { threadId, event } of events) {
        if (event.type === 'turn.interruptRequested') this.arm(threadId, event.turnId);
        else if (event.type === 'turn.completed' || event.type === 'turn.failed' || event.type === 'turn.interrupted') this.disarm(event.turnId);
      }
    });
    for (const { threadId, turnId } of this.engine.listOpenTurns()) {
      if ((await this.engine.getThread(threadId)).turns[turnId]?.state.startsWith('interrupting')) this.arm(threadId, turnId);
    }
    return this;
  }

  private arm(threadId: string, turnId: string): void {
    if (this.timers.has(turnId)) return;
    const timer = setTimeout(() => {
      this.timers.delete(turnId);
      this.engine
        .submit({ type: 'turn.settle', commandId: `deadline:${turnId}`, threadId, turnId, outcome: { kind: 'interrupted', cause: 'deadline', reason: 'the interrupt was not confirmed in time' } })
        .catch((error: unknown) => {
          // Settled meanwhile (confirmed, completed): exactly what the deadline waited for.
          if (!(error instanceof TurnloomError && (error.code === 'illegal_transition' || error.code === 'unavailable'))) console.error('turnloom deadlines:', error);
        });
    }, this.deadlineMs);
    timer.unref();
    this.timers.set(turnId, timer);
  }

  private disarm(turnId: string): void {
    clearTimeout(this.timers.get(turnId));
    this.timers.delete(turnId);
  }

  stop(): void {
    this.unsubscribe?.();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
