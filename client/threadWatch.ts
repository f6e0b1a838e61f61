import { createStore } from '@xstate/store';
import { type BusMessage, type BusStatus, type BusSubscription, decode } from '../bus/index.ts';
import type { StoredEvent } from '../services/engine/domainEvents.ts';
import { project } from '../services/engine/projector.ts';
import type { ThreadView } from '../services/engine/threadView.ts';
import type { TurnloomClient } from './turnloomClient.ts';

export interface ThreadWatchContext {
  view: ThreadView | null;
  /** Per-thread sequence of the last event folded in. */
  seq: number;
  status: 'loading' | 'live' | 'catchingUp' | 'closed';
  /** How often a whole snapshot was loaded (once at start, again past a 1,000-event gap). */
  snapshots: number;
  /** Events received twice (live and through catch-up) and dropped by sequence. */
  duplicates: number;
}

const createWatchStore = () =>
  createStore({
    context: { view: null, seq: 0, status: 'loading', snapshots: 0, duplicates: 0 } as ThreadWatchContext,
    on: {
      snapshotLoaded: (context, { view }: { view: ThreadView }) => ({ ...context, view, seq: view.seq, snapshots: context.snapshots + 1 }),
      eventApplied: (context, { event }: { event: StoredEvent }) => ({ ...context, view: project(context.view!, event), seq: event.threadSeq }),
      duplicateDropped: (context) => ({ ...context, duplicates: context.duplicates + 1 }),
      statusChanged: (context, { status }: { status: ThreadWatchContext['status'] }) => ({ ...context, status }),
    },
  });

type Work = { kind: 'event'; event: StoredEvent } | { kind: 'catchUp' };

/**
 * A client's cache of one thread, kept in an `@xstate/store` store and
 * folded with the engine's own projector. It subscribes first, then loads
 * the snapshot and its sequence, applies events in sequence order, fills a
 * gap of up to 1,000 events through `thread.events` (past that it reloads the
 * snapshot), drops duplicates by sequence, and catches up after a reconnect.
 */
export class ThreadWatch {
  readonly threadId: string;
  readonly store = createWatchStore();
  private readonly client: TurnloomClient;
  private readonly pending: Work[] = [];
  private pumping: Promise<void> | null = null;
  private ready = false;
  private subscription: BusSubscription | undefined;
  private unwatchStatus: (() => void) | undefined;
  private lastStatus: BusStatus = 'connected';

  constructor(client: TurnloomClient, threadId: string) {
    this.client = client;
    this.threadId = threadId;
  }

  get context(): ThreadWatchContext {
    return this.store.getSnapshot().context;
  }

  async start(): Promise<void> {
    const { bus, subjects } = this.client;
    this.subscription = bus.subscribe(subjects.events(this.threadId), (message) => this.receive(message));
    // The subscription must be in place before the snapshot is read, or events between the two would be lost.
    await bus.flush();
    this.unwatchStatus = bus.onStatus((status) => {
      if (status === 'connected' && this.lastStatus !== 'connected') this.enqueue({ kind: 'catchUp' });
      this.lastStatus = status;
    });
    await this.loadSnapshot();
    this.ready = true;
    this.store.trigger.statusChanged({ status: 'live' });
    this.pump();
  }

  private receive(message: BusMessage): void {
    try {
      this.enqueue({ kind: 'event', event: decode(message.data, 'application/msgpack') as StoredEvent });
    } catch (error) {
      // A garbled message is as good as a lost one: catch up from the log.
      console.error(`turnloom client: undecodable event on ${message.subject}`, error);
      this.enqueue({ kind: 'catchUp' });
    }
  }

  private enqueue(work: Work): void {
    this.pending.push(work);
    this.pump();
  }

  private pump(): void {
    if (this.pumping || !this.ready) return;
    this.pumping = this.drain().finally(() => {
      this.pumping = null;
      if (this.pending.length > 0 && this.context.status !== 'closed') this.pump();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0 && this.context.status !== 'closed') {
      const work = this.pending.shift()!;
      if (work.kind === 'catchUp') {
        await this.catchUp();
        continue;
      }
      const { event } = work;
      if (event.threadSeq > this.context.seq + 1) await this.catchUp();
      this.apply(event);
    }
  }

  private apply(event: StoredEvent): void {
    if (event.threadSeq <= this.context.seq) this.store.trigger.duplicateDropped();
    else if (event.threadSeq === this.context.seq + 1) this.store.trigger.eventApplied({ event });
    // A later event after a failed catch-up stays unapplied; the next catch-up brings it.
  }

  private async loadSnapshot(): Promise<void> {
    const { thread } = await this.client.call('thread.get', { threadId: this.threadId });
    if (thread.seq >= this.context.seq) this.store.trigger.snapshotLoaded({ view: thread });
  }

  /** Reads the log past our sequence until we hold everything the server has; retries while the server is away. */
  private async catchUp(): Promise<void> {
    this.store.trigger.statusChanged({ status: 'catchingUp' });
    for (let attempt = 0; this.context.status !== 'closed'; attempt++) {
      try {
        for (;;) {
          const page = await this.client.call('thread.events', { threadId: this.threadId, after: this.context.seq });
          if (page.snapshotRequired) {
            await this.loadSnapshot();
            continue;
          }
          for (const event of page.events) this.apply(event);
          if (page.events.length === 0 || this.context.seq >= page.lastSeq) break;
        }
        this.store.trigger.statusChanged({ status: 'live' });
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }

  /** Resolves once every queued event and catch-up has been handled. */
  async settled(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.unwatchStatus?.();
    this.store.trigger.statusChanged({ status: 'closed' });
  }
}
