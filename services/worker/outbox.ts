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
  | { kind: 'record'; events: DomainEvent[]; bytes: number; done: (result: CommandResult) => void; fail: (error: unknown) => void }
  | { kind: 'settle'; outcome: SettleRequest['outcome']; bytes: number; done: (result: CommandResult) => void; fail: (error: unknown) => void };

/**
 * How much one request may carry when queued records are merged: well inside
 * NATS's default max_payload of 1 MiB. A single record larger than this still
 * goes, alone, as it would have.
 */
const MERGE_MAX_BYTES = 256 * 1024;
const MERGE_MAX_EVENTS = 1_000;

/**
 * Everything a worker writes under one lease, in order, one request at a
 * time. Records queued while a request is out (or within the same tick) go
 * together as the next request: one durable commit instead of one each, so a
 * turn waits for the disk about as often as its crash story needs and no
 * more. A request the engine cannot take now (it is restarting, NATS is down)
 * is kept and sent again with the same number, so the engine answers a retry
 * instead of writing twice. The turn goes on meanwhile; what piles up is
 * bounded, and past the bound `overloaded` tells the turn to stop.
 */
export class Outbox {
  private readonly queue: Write[] = [];
  private held: DomainEvent[] = [];
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

  /**
   * Events that go first in the turn's next write, whatever it is (a turn's
   * start rides with its first step); until then nothing waits for them, `flushed()` included.
   */
  hold(events: DomainEvent[]): void {
    this.held.push(...events);
  }

  /**
   * Has the engine decide `events`, after the held ones, against its log
   * exactly as a write of them would be decided, writing nothing. A step is
   * checked this way before its model call (its request against the log), so
   * a request the log would refuse is never sent, and is then written with
   * the call's first answer instead of in a commit of its own.
   */
  async check(events: DomainEvent[]): Promise<void> {
    // Decided on top of everything written so far, as the write will be.
    await this.flushed();
    const { workerId, threadId, turnId, token, key } = this.proof;
    await this.link.persist<CommandResult>('check', { workerId, threadId, turnId, token, key, events: [...this.held, ...events] }, this.signal, this.headers());
  }

  /** Queues events (after any held ones); resolves with the engine's answer once they are durable. Nothing to write resolves at once. */
  record(recorded: DomainEvent[]): Promise<CommandResult | null> {
    if (recorded.length === 0) return Promise.resolve(null);
    return this.enqueueRecord([...this.held.splice(0), ...recorded]);
  }

  private enqueueRecord(events: DomainEvent[]): Promise<CommandResult> {
    const bytes = jsonBytes(events);
    if (bytes <= MERGE_MAX_BYTES) return this.enqueue((done, fail) => ({ kind: 'record', events, bytes, done, fail }), events.length);
    // More than one request carries (a provider's chunk of megabytes, in pieces): several writes, in order, done with the last.
    const writes = splitByBytes(events, MERGE_MAX_BYTES).map((chunk) => this.enqueue((done, fail) => ({ kind: 'record', events: chunk, bytes: jsonBytes(chunk), done, fail }), chunk.length));
    return Promise.all(writes).then((results) => results.at(-1)!);
  }

  /** Queues events without waiting; a failure is kept in `failure` for the turn to find. */
  push(events: DomainEvent[]): void {
    this.record(events).catch(() => undefined);
  }

  settle(outcome: SettleRequest['outcome']): Promise<CommandResult | null> {
    // What is held goes first, without waiting; a failure is kept in `failure`.
    if (this.held.length > 0) this.enqueueRecord(this.held.splice(0)).catch(() => undefined);
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
    // A turn usually writes several things in a row (a stream's end, then the tool it asked for): they leave together.
    setImmediate(() => {
      void this.drain().finally(() => {
        this.pumping = false;
        // A write queued while the last one was being answered would otherwise wait for the next write.
        if (this.queue.length > 0) this.pump();
      });
    });
  }

  /** The next request: a settle alone, or the records at the head of the queue, as many as fit in one. */
  private nextBatch(): Write[] {
    const first = this.queue[0]!;
    if (first.kind === 'settle') return [first];
    const batch = [first];
    let bytes = first.bytes;
    let events = first.events.length;
    for (const write of this.queue.slice(1)) {
      if (write.kind !== 'record' || bytes + write.bytes > MERGE_MAX_BYTES || events + write.events.length > MERGE_MAX_EVENTS) break;
      batch.push(write);
      bytes += write.bytes;
      events += write.events.length;
    }
    return batch;
  }

  private send(batch: Write[]): Promise<CommandResult> {
    const { workerId, threadId, turnId, token, key } = this.proof;
    const first = batch[0]!;
    if (first.kind === 'settle') return this.link.persist<CommandResult>('settle', { workerId, threadId, turnId, token, key, outcome: first.outcome }, this.signal, this.headers());
    const events = batch.flatMap((write) => (write.kind === 'record' ? write.events : []));
    return this.link.persist<CommandResult>('record', { workerId, threadId, turnId, token, key, seq: ++this.seq, events }, this.signal, this.headers());
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.nextBatch();
      try {
        if (this.refuses(batch[0]!)) throw this.failure;
        const result = await this.send(batch);
        this.lastSeq = Math.max(this.lastSeq, result.toThreadSeq);
        for (const write of batch) write.done(result);
      } catch (error) {
        this.failure ??= error;
        for (const write of batch) write.fail(error);
      } finally {
        this.queue.splice(0, batch.length);
        for (const write of batch) {
          if (write.kind === 'record') this.pendingEvents -= write.events.length;
          this.pendingBytes -= write.bytes;
        }
      }
    }
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

/** The events in runs of at most `maxBytes` as JSON (an event larger than that alone in its own). */
function splitByBytes(events: DomainEvent[], maxBytes: number): DomainEvent[][] {
  const runs: DomainEvent[][] = [];
  let run: DomainEvent[] = [];
  let size = 0;
  for (const event of events) {
    const bytes = jsonBytes(event);
    if (run.length > 0 && size + bytes > maxBytes) {
      runs.push(run);
      run = [];
      size = 0;
    }
    run.push(event);
    size += bytes;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

