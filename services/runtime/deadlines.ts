import type { Engine } from '../engine/engine.ts';
import { systemCommandId } from '../engine/commands.ts';
import { type Logger, TurnloomError, type TurnView, errorFields, silentLogger } from '../../domain/index.ts';

export interface DeadlineOptions {
  /** An interrupt nobody confirms is settled after this long. */
  interruptMs: number;
  /** An approval nobody answers expires after this long; `null`: approvals wait for ever. */
  approvalMs: number | null;
  /** In a cluster: whether this engine owns the thread (only its owner keeps its deadlines). */
  owns?: (threadId: string) => boolean;
  log?: Logger;
}

/**
 * The deadlines of the lifecycles, kept outside the machines (XState would
 * not re-arm `after` timers from a persisted snapshot) and re-armed on start
 * from the read model: an interrupt nobody confirms (the worker died, hangs,
 * or never existed) is settled with cause `deadline`; an approval nobody
 * answers expires, which the tool waiting for it reads as a refusal.
 */
export class Deadlines {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly engine: Engine,
    private readonly options: DeadlineOptions,
  ) {}

  async start(): Promise<this> {
    this.unsubscribe = this.engine.onCommitted((events) => {
      for (const { threadId, at, event } of events) {
        if (event.type === 'turn.interruptRequested') this.armInterrupt(threadId, event.turnId, this.options.interruptMs);
        else if (event.type === 'approval.requested') this.armApproval(threadId, event.approvalId, at);
        else if (event.type === 'turn.completed' || event.type === 'turn.failed' || event.type === 'turn.interrupted') this.disarm(`turn:${threadId}:${event.turnId}`);
        else if (event.type === 'approval.granted' || event.type === 'approval.denied' || event.type === 'approval.cancelled' || event.type === 'approval.expired') {
          this.disarm(`approval:${threadId}:${event.approvalId}`);
        }
      }
    });
    void this.engine
      .forEachOpenTurn((threadId, turn) => {
        if (!this.stopped && (this.options.owns?.(threadId) ?? true)) this.armOpen(threadId, turn);
      })
      .catch((error: unknown) => (this.options.log ?? silentLogger).error(errorFields(error), 'deadlines: could not read the open turns'));
    return this;
  }

  /** The deadlines of a thread's open turn, re-armed from the read model (on start, or when this engine takes the thread). */
  private armOpen(threadId: string, turn: TurnView): void {
    if (turn.state.startsWith('interrupting')) this.armInterrupt(threadId, turn.id, this.options.interruptMs);
    for (const approval of turn.approvals) if (approval.state === 'pending') this.armApproval(threadId, approval.id, approval.requestedAt);
  }

  /** Arms the deadlines of a thread this engine of a cluster just took. */
  async adopt(threadId: string): Promise<void> {
    const view = await this.engine.getThread(threadId);
    const turn = view.openTurnId ? view.turns[view.openTurnId] : undefined;
    if (turn && !this.stopped) this.armOpen(threadId, turn);
  }

  /** Disarms the deadlines of a thread this engine no longer owns: its new owner keeps them. */
  forget(threadId: string): void {
    for (const key of [...this.timers.keys()]) {
      if (key.startsWith(`turn:${threadId}:`) || key.startsWith(`approval:${threadId}:`)) this.disarm(key);
    }
  }

  private armInterrupt(threadId: string, turnId: string, ms: number): void {
    this.arm(`turn:${threadId}:${turnId}`, ms, () =>
      this.engine.submit({ type: 'turn.settle', commandId: systemCommandId('deadline', threadId, turnId), threadId, turnId, outcome: { kind: 'interrupted', cause: 'deadline', reason: 'the interrupt was not confirmed in time' } }),
    );
  }

  private armApproval(threadId: string, approvalId: string, requestedAt: number): void {
    if (this.options.approvalMs === null) return;
    this.arm(`approval:${threadId}:${approvalId}`, Math.max(0, requestedAt + this.options.approvalMs - Date.now()), () =>
      this.engine.submit({ type: 'approval.expire', commandId: systemCommandId('expire', threadId, approvalId), threadId, approvalId }),
    );
  }

  private arm(key: string, ms: number, fire: () => Promise<unknown>): void {
    if (this.timers.has(key)) return;
    const timer = setTimeout(() => {
      this.timers.delete(key);
      fire().catch((error: unknown) => {
        // Settled or answered meanwhile: exactly what the deadline waited for.
        if (!(error instanceof TurnloomError && (error.code === 'illegal_transition' || error.code === 'unavailable' || error.code === 'not_found'))) {
          (this.options.log ?? silentLogger).error({ ...errorFields(error), deadline: key }, 'deadlines: could not settle what was due');
        }
      });
    }, ms);
    timer.unref();
    this.timers.set(key, timer);
  }

  private disarm(key: string): void {
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
