import { type BusMessage, type BusStatus, type BusSubscription, type Logger, type StoredEvent, TurnloomError, errorFields, silentLogger } from '../domain/index.ts';
import { MSGPACK, decode } from '../bus/index.ts';
import type { ApiCaller } from '../client/index.ts';
import { LeaseLive, decodeLiveBatch } from '../protocol/liveBatch.ts';
import type { LiveDelta } from '../protocol/liveBatch.ts';

/** What the page hears, as server-sent events (see docs/inspector.md). */
export type StreamMessage =
  | { kind: 'event'; event: StoredEvent }
  | { kind: 'caughtUp'; seq: number }
  | { kind: 'live'; deltas: LiveDelta[] }
  | { kind: 'inspect'; inspection: unknown }
  | { kind: 'relay'; bus: BusStatus }
  | { kind: 'failed'; code: string; message: string };

/** Resolves when the page's connection can take more (its socket buffer drained). */
export type StreamSink = (message: StreamMessage) => Promise<void>;

const PAGE = 1_000;
/** In case the last event of a burst was lost on the bus: a gap is noticed only when a later one arrives. */
const POLL_MS = 5_000;

/** Answers that retrying cannot fix: the stream ends with them. */
const fatal = new Set(['not_found', 'forbidden', 'unauthorized', 'invalid_payload']);

/**
 * Follows one thread for one page: its committed events in order, each once,
 * from `after`, then live; the live deltas of its open turn's lease (from
 * that lease's channel alone) and its inspection records as they come.
 * Subscribes before paging the log, so nothing falls between the two; a gap
 * in the sequence, a reconnection of the bus or the poll pages again from
 * the last event sent.
 */
export class ThreadStream {
  private readonly api: ApiCaller;
  private readonly threadId: string;
  private readonly sink: StreamSink;
  private lastSent: number;
  private readonly subscriptions: BusSubscription[] = [];
  private stopStatus: (() => void) | undefined;
  private poll: NodeJS.Timeout | undefined;
  private catchingUp: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private following = true;
  /** Set once the API let the relay's token read the thread: nothing reaches the page before. */
  private allowed = false;
  /** Deliveries to the page, one at a time, in order. */
  private queue: Promise<void> = Promise.resolve();
  /** Where the open turn's lease sends live deltas, as of thread sequence `leaseSeq` (`null` until the thread was read): nothing else on its live subjects passes. */
  private lease: LeaseLive | null = null;
  private leaseSeq = 0;

  constructor(api: ApiCaller, threadId: string, after: number, sink: StreamSink, private readonly log: Logger = silentLogger) {
    this.api = api;
    this.threadId = threadId;
    this.lastSent = after;
    this.sink = sink;
  }

  async start(): Promise<void> {
    const { bus, subjects } = this.api;
    this.subscriptions.push(
      bus.subscribe(subjects.events(this.threadId), (message) => this.onEvent(message)),
      bus.subscribe(subjects.liveOf(this.threadId), (message) => {
        if (this.lease?.accepts(message.subject)) this.forward(message, (data) => ({ kind: 'live', deltas: decodeLiveBatch(data) }));
      }),
      bus.subscribe(subjects.inspect(this.threadId), (message) => this.forward(message, (data) => ({ kind: 'inspect', inspection: decode(data, MSGPACK) }))),
    );
    this.stopStatus = bus.onStatus((status) => {
      this.deliver({ kind: 'relay', bus: status });
      if (status === 'connected') this.catchUp();
    });
    this.deliver({ kind: 'relay', bus: bus.status() });
    this.poll = setInterval(() => this.catchUp(), POLL_MS);
    this.poll.unref();
    this.catchUp();
    await this.catchingUp;
    if (this.following) this.deliver({ kind: 'caughtUp', seq: this.lastSent });
  }

  /** The page went away: nothing more is delivered. */
  close(): void {
    this.closed = true;
    this.stopFollowing();
  }

  /** Stops listening; what is already queued for the page still goes out. */
  private stopFollowing(): void {
    this.following = false;
    clearInterval(this.poll);
    this.stopStatus?.();
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
  }

  private deliver(message: StreamMessage): void {
    if (this.closed) return;
    this.queue = this.queue.then(() => (this.closed ? undefined : this.sink(message)));
  }

  private forward(message: BusMessage, read: (data: Uint8Array) => StreamMessage): void {
    // The subjects carry every principal's threads; the log read is where the token is checked.
    if (!this.allowed) return;
    try {
      this.deliver(read(message.data));
    } catch (error) {
      this.log.warn({ ...errorFields(error), subject: message.subject }, 'inspect: a malformed message');
    }
  }

  private onEvent(message: BusMessage): void {
    let event: StoredEvent;
    try {
      event = decode(message.data, MSGPACK) as StoredEvent;
    } catch (error) {
      this.log.warn({ ...errorFields(error), subject: message.subject }, 'inspect: a malformed event');
      return;
    }
    if (this.catchingUp) {
      // The page being read may or may not hold it: read again when done.
      if (event.threadSeq > this.lastSent) this.again = true;
      return;
    }
    if (event.threadSeq <= this.lastSent) return;
    if (event.threadSeq === this.lastSent + 1) this.send(event);
    else this.catchUp();
  }

  private send(event: StoredEvent): void {
    this.lastSent = event.threadSeq;
    if (this.lease && event.threadSeq > this.leaseSeq) {
      this.lease.follow(event.event);
      this.leaseSeq = event.threadSeq;
    }
    this.deliver({ kind: 'event', event });
  }

  /**
   * The thread's environment and its open turn's lease, once, before the log
   * is paged (a stream that resumes after `after` never sees a lease taken
   * before it); events past the thread's sequence then keep it current.
   */
  private async readLease(): Promise<void> {
    try {
      const { thread } = await this.api.call('thread.get', { threadId: this.threadId, turns: 1 });
      const held = thread.openTurnId ? thread.turns[thread.openTurnId]?.lease : null;
      this.lease = new LeaseLive(this.api.subjects, thread.environment, this.threadId, held?.keyHash ?? null);
      this.leaseSeq = thread.seq;
    } catch (error) {
      if (!(error instanceof TurnloomError && error.code === 'unavailable' && typeof error.details.size === 'number')) throw error;
      // An open turn too large for one answer: the environment is in the thread's first event, and typing shows from the next lease on.
      const [created] = (await this.api.call('thread.events', { threadId: this.threadId, after: 0, limit: 1 })).events;
      if (created?.event.type !== 'thread.created') throw new TurnloomError('internal', `thread ${this.threadId} does not begin with thread.created`);
      this.lease = new LeaseLive(this.api.subjects, created.event.environment, this.threadId, null);
      this.leaseSeq = this.lastSent;
    }
  }

  /** Pages the log from the last event sent until it is read to the end; one run at a time. */
  private catchUp(): void {
    if (!this.following) return;
    if (this.catchingUp) {
      this.again = true;
      return;
    }
    this.catchingUp = this.readLog()
      .catch((error: unknown) => {
        const body = error instanceof TurnloomError ? error : new TurnloomError('internal', String(error));
        if (fatal.has(body.code)) {
          this.deliver({ kind: 'failed', code: body.code, message: body.message });
          this.stopFollowing();
        }
        // Otherwise the engine is away for now: the poll or the next event tries again.
      })
      .finally(() => {
        this.catchingUp = null;
        if (this.again && this.following) {
          this.again = false;
          this.catchUp();
        }
      });
  }

  private async readLog(): Promise<void> {
    if (!this.lease) await this.readLease();
    for (;;) {
      this.again = false;
      const { events } = await this.api.call('thread.events', { threadId: this.threadId, after: this.lastSent, limit: PAGE });
      this.allowed = true;
      for (const event of events) if (event.threadSeq === this.lastSent + 1) this.send(event);
      // Let the page's socket drain before reading more: a 10,000-event thread never sits in memory twice.
      await this.queue;
      if (events.length < PAGE || !this.following) return;
    }
  }
}
