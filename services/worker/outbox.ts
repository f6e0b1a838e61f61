import { type DomainEvent, TurnloomError, jsonBytes } from '../../domain/index.ts';
import type { CommandResult } from '../engine/commands.ts';
import type { LeaseProof, SettleRequest } from '../dispatch/workerProtocol.ts';
import type { WorkerLink } from './workerLink.ts';
import { TRACEPARENT_HEADER } from '../../protocol/traceContext.ts';

/** How much a turn may pile up while the engine is away before it gives up. */
export interface OutboxBounds {
  maxEvents: number;
  maxBytes: number;
}

type Write =
  | { kind: 'record'; seq: number; events: DomainEvent[]; bytes: number; done: (result: CommandResult) => void; fail: (error: unknown) => void }
  | { kind: 'settle'; outcome: SettleRequest['outcome']; bytes: number; done: (result: CommandResult) => void; fail: (error: unknown) => void };

/**
 * Everything a worker writes under one lease, in order, one write at a time.
 * A write the engine cannot take now (it is restarting, NATS is down) is
 * kept and sent again with the same number, so the engine answers a retry
 * from its receipt instead of writing twice. The turn goes on meanwhile; what
 * piles up is bounded, and past the bound `overloaded` tells the turn to stop.
 */
export class Outbox {
  private readonly queue: Write[] = [];
  private seq = 0;
  private pumping = false;
  private readonly idle: Array<() => void> = [];
  private pendingEvents = 0;
  private pendingBytes = 0;
  /** The first write the engine refused for good (fenced, conflict…): everything after it is refused too. */
  failure: unknown = null;
  /** The thread sequence the last acknowledged write reached. */
  lastSeq = 0;
  /** The trace of the turn's run on this worker, sent with every write so the engine's spans of it join the trace. */
  traceparent: string | null = null;

  constructor(
    private readonly link: WorkerLink,
    private readonly proof: LeaseProof,
    private readonly bounds: OutboxBounds,
    private readonly signal: AbortSignal,
  ) {}

  /** Past the bounds: the engine has been away too long for this turn to go on. */
  get overloaded(): boolean {
    return this.pendingEvents > this.bounds.maxEvents || this.pendingBytes > this.bounds.maxBytes;
  }

  get backlog(): { events: number; bytes: number } {
    return { events: this.pendingEvents, bytes: this.pendingBytes };
  }

  /** Queues events; resolves with the engine's answer once they are durable. Nothing to write resolves at once. */
  record(events: DomainEvent[]): Promise<CommandResult | null> {
    if (events.length === 0) return Promise.resolve(null);
    return this.enqueue((done, fail) => ({ kind: 'record', seq: ++this.seq, events, bytes: jsonBytes(events), done, fail }), events.length);
  }

  /** Queues events without waiting; a failure is kept in `failure` for the turn to find. */
  push(events: DomainEvent[]): void {
    this.record(events).catch(() => undefined);
  }

  settle(outcome: SettleRequest['outcome']): Promise<CommandResult | null> {
    return this.enqueue((done, fail) => ({ kind: 'settle', outcome, bytes: jsonBytes(outcome), done, fail }), 0);
  }

  /** Resolves once everything queued so far is durable; rejects with the first refusal. */
  async flushed(): Promise<void> {
    if (this.queue.length > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    if (this.failure) throw this.failure;
  }

  private enqueue(make: (done: Write['done'], fail: Write['fail']) => Write, events: number): Promise<CommandResult> {
    return new Promise<CommandResult>((done, fail) => {
      const write = make(done, fail);
      if (this.refuses(write)) return fail(this.failure);
      this.queue.push(write);
      this.pendingEvents += events;
      this.pendingBytes += write.bytes;
      this.pump();
    });
  }

  /** After a refusal nothing more is recorded; a settle still goes, unless the lease itself is gone. */
  private refuses(write: Write): boolean {
    if (!this.failure) return false;
    return write.kind === 'record' || (this.failure instanceof TurnloomError && this.failure.code === 'fenced');
  }

  private headers(): Record<string, string> {
    return this.traceparent ? { [TRACEPARENT_HEADER]: this.traceparent } : {};
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    void this.drain().finally(() => {
      this.pumping = false;
      // A write queued while the last one was being answered would otherwise wait for the next write.
      if (this.queue.length > 0) this.pump();
    });
  }

  private async drain(): Promise<void> {
    for (let write = this.queue[0]; write; write = this.queue[0]) {
      try {
        if (this.refuses(write)) throw this.failure;
        const { workerId, threadId, turnId, token, key } = this.proof;
        const result =
          write.kind === 'record'
            ? await this.link.persist<CommandResult>('record', { workerId, threadId, turnId, token, key, seq: write.seq, events: write.events }, this.signal, this.headers())
            : await this.link.persist<CommandResult>('settle', { workerId, threadId, turnId, token, key, outcome: write.outcome }, this.signal, this.headers());
        this.lastSeq = Math.max(this.lastSeq, result.toThreadSeq);
        write.done(result);
      } catch (error) {
        this.failure ??= error;
        write.fail(error);
      } finally {
        this.queue.shift();
        if (write.kind === 'record') this.pendingEvents -= write.events.length;
        this.pendingBytes -= write.bytes;
      }
    }
    for (const resolve of this.idle.splice(0)) resolve();
  }
}
