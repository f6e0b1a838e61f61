import { randomUUID } from 'node:crypto';
import { type Bus, type BusMessage, type BusSubscription, type Logger, type StoredEvent, TurnloomError, errorFields, silentLogger } from '../../domain/index.ts';
import { JSON_TYPE, MSGPACK, type Subjects, decode, encode } from '../../bus/index.ts';
import type { Engine } from '../engine/engine.ts';
import { LeaseLive } from '../../protocol/liveBatch.ts';
import { WATCH_KIND_HEADER } from '../../protocol/apiResults.ts';

/** Principals named so are workers following the turns they hold. */
export const WORKER_PRINCIPAL_PREFIX = 'worker:';


export interface ThreadWatchesOptions {
  /** A watch not renewed for this long is dropped (a client that vanished stops costing anything). */
  ttlMs?: number;
  maxPerPrincipal?: number;
  maxTotal?: number;
  now?: () => number;
  /**
   * In a cluster a watch lives on the engine that owns its thread: a watch
   * dropped through another engine is asked of all of them.
   */
  cluster?: boolean;
  log?: Logger;
}

/** How long an engine of a cluster waits for another to say it dropped a watch (one that nobody has is not answered). */
const UNWATCH_ASK_MS = 1_000;

interface Watch {
  id: string;
  principal: string;
  threadId: string;
  deliverTo: string;
  expiresAt: number;
  /**
   * Whether it hears the live deltas. A worker's watch does not: it follows
   * the turn it runs for the log's events (its lease, an interrupt), and the
   * deltas are its own typing, which the engine would otherwise take in and
   * send back to it, every one of every streaming turn.
   */
  live: boolean;
}

/**
 * Follows threads for clients that may not subscribe to the raw event
 * subjects: after the API checked a caller's token and its right to the
 * thread, every committed event of that thread (with its `turnloom-seq`)
 * and the live deltas of its open turn's lease go to the caller's own inbox,
 * until the watch lapses or is dropped. Same order, same sequence numbers,
 * same catch-up rules as the event subject.
 */
export class ThreadWatches {
  private readonly byId = new Map<string, Watch>();
  private readonly byThread = new Map<string, Set<Watch>>();
  private readonly live = new Map<string, BusSubscription>();
  /** Per watched thread, where its open turn's lease sends live deltas: the only live subject of the thread they are taken from. */
  private readonly leases = new Map<string, LeaseLive>();
  private engine: Engine | undefined;
  private readonly ttlMs: number;
  private readonly maxPerPrincipal: number;
  private readonly maxTotal: number;
  private readonly now: () => number;
  private unsubscribe: (() => void) | undefined;
  private asked: BusSubscription | undefined;
  private readonly cluster: boolean;
  private readonly log: Logger;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly subjects: Subjects,
    options: ThreadWatchesOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.log = options.log ?? silentLogger;
    this.maxPerPrincipal = options.maxPerPrincipal ?? 64;
    this.maxTotal = options.maxTotal ?? 10_000;
    this.now = options.now ?? Date.now;
    this.cluster = options.cluster ?? false;
  }

  start(engine: Engine): this {
    this.engine = engine;
    this.unsubscribe = engine.onCommitted((events) => this.forward(events));
    if (this.cluster) {
      // Another engine was asked to drop a watch: the one that has it says so.
      this.asked = this.bus.subscribe(this.subjects.engineCast('unwatch'), (message) => {
        const asked = decodeAsk(message.data);
        if (asked && message.reply && this.unwatchHere(asked.principal, asked.watchId)) this.bus.publish(message.reply, encode({ removed: true }, JSON_TYPE));
      });
    }
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, this.ttlMs / 4));
    this.sweeper.unref();
    return this;
  }

  /** Starts a watch, or renews the caller's own one; `created` tells a client it may have missed events since its last renewal. */
  watch(principal: string, threadId: string, deliverTo: string, watchId?: string): { watchId: string; expiresInMs: number; created: boolean } {
    const existing = watchId === undefined ? undefined : this.byId.get(watchId);
    if (existing && (existing.principal !== principal || existing.threadId !== threadId)) {
      throw new TurnloomError('conflict', `watch ${watchId} is someone else's, or of another thread`, { watchId });
    }
    if (existing) {
      existing.deliverTo = deliverTo;
      existing.expiresAt = this.now() + this.ttlMs;
      return { watchId: existing.id, expiresInMs: this.ttlMs, created: false };
    }
    if (this.byId.size >= this.maxTotal) throw new TurnloomError('unavailable', `the server follows ${this.maxTotal} threads for clients already; try again later`, { limit: this.maxTotal });
    const mine = [...this.byId.values()].filter((watch) => watch.principal === principal).length;
    // A worker follows every turn it runs (its capacity bounds it); the per-principal limit is for clients.
    if (mine >= this.maxPerPrincipal && !principal.startsWith(WORKER_PRINCIPAL_PREFIX)) {
      throw new TurnloomError('conflict', `${principal} already has ${mine} watches, the most one principal may have; drop some with thread.unwatch`, { limit: this.maxPerPrincipal });
    }
    const watch: Watch = { id: watchId ?? randomUUID(), principal, threadId, deliverTo, expiresAt: this.now() + this.ttlMs, live: !principal.startsWith(WORKER_PRINCIPAL_PREFIX) };
    this.byId.set(watch.id, watch);
    const watchers = this.byThread.get(threadId) ?? new Set<Watch>();
    watchers.add(watch);
    this.byThread.set(threadId, watchers);
    if (watch.live && !this.live.has(threadId)) this.followLive(threadId);
    return { watchId: watch.id, expiresInMs: this.ttlMs, created: true };
  }

  private followLive(threadId: string): void {
    // Only ever asked once the API found the thread, after start().
    const engine = this.engine!;
    const summary = engine.summary(threadId)!;
    const held = summary.openTurnId ? engine.readTurn(threadId, summary.openTurnId)?.lease : null;
    const lease = new LeaseLive(this.subjects, summary.environment, threadId, held?.keyHash ?? null);
    this.leases.set(threadId, lease);
    // What the lease holder sends goes on untouched (no decoding on the typing path); anything else on the thread's live subjects is dropped.
    const forward = (message: BusMessage) => {
      if (lease.accepts(message.subject)) this.send(threadId, message.data, { [WATCH_KIND_HEADER]: 'live' }, true);
    };
    this.live.set(threadId, this.bus.subscribe(this.subjects.liveOf(threadId), forward));
  }

  /** Drops the caller's watch; in a cluster, on whichever engine has it. */
  async unwatch(principal: string, watchId: string): Promise<boolean> {
    if (this.unwatchHere(principal, watchId)) return true;
    if (!this.cluster) return false;
    try {
      await this.bus.request(this.subjects.engineCast('unwatch'), encode({ principal, watchId }, JSON_TYPE), { timeoutMs: UNWATCH_ASK_MS });
      return true;
    } catch {
      return false;
    }
  }

  private unwatchHere(principal: string, watchId: string): boolean {
    const watch = this.byId.get(watchId);
    if (!watch || watch.principal !== principal) return false;
    this.drop(watch);
    return true;
  }

  /** Whether any watch follows the thread here (in a cluster, its owner keeps it while it does). */
  watching(threadId: string): boolean {
    return this.byThread.has(threadId);
  }

  /** Drops every watch of a thread this engine of a cluster no longer owns: their renewals reach its new owner, which starts them again. */
  dropThread(threadId: string): void {
    for (const watch of [...(this.byThread.get(threadId) ?? [])]) this.drop(watch);
  }

  get size(): number {
    return this.byId.size;
  }

  private drop(watch: Watch): void {
    this.byId.delete(watch.id);
    const watchers = this.byThread.get(watch.threadId);
    watchers?.delete(watch);
    if (watchers && watchers.size === 0) this.byThread.delete(watch.threadId);
    if (!watchers || ![...watchers].some((other) => other.live)) {
      this.live.get(watch.threadId)?.unsubscribe();
      this.live.delete(watch.threadId);
      this.leases.delete(watch.threadId);
    }
  }

  private forward(events: readonly StoredEvent[]): void {
    for (const event of events) {
      if (!this.byThread.has(event.threadId)) continue;
      this.leases.get(event.threadId)?.follow(event.event);
      this.send(event.threadId, encode(event, MSGPACK), { [WATCH_KIND_HEADER]: 'event', 'turnloom-seq': String(event.threadSeq) });
    }
  }

  private send(threadId: string, data: Uint8Array, headers: Record<string, string>, live = false): void {
    for (const watch of this.byThread.get(threadId) ?? []) {
      if (live && !watch.live) continue;
      try {
        this.bus.publish(watch.deliverTo, data, { headers: { 'content-type': MSGPACK, ...headers } });
      } catch (error) {
        // The event is durable; the watcher finds it through thread.events.
        this.log.warn({ ...errorFields(error), watchId: watch.id, threadId }, 'could not deliver to a watch');
      }
    }
  }

  private sweep(): void {
    const now = this.now();
    for (const watch of [...this.byId.values()]) if (watch.expiresAt <= now) this.drop(watch);
  }

  stop(): void {
    this.unsubscribe?.();
    this.asked?.unsubscribe();
    clearInterval(this.sweeper);
    for (const watch of [...this.byId.values()]) this.drop(watch);
  }
}

function decodeAsk(data: Uint8Array): { principal: string; watchId: string } | null {
  try {
    const asked = decode(data, JSON_TYPE) as { principal?: unknown; watchId?: unknown };
    return typeof asked.principal === 'string' && typeof asked.watchId === 'string' ? { principal: asked.principal, watchId: asked.watchId } : null;
  } catch {
    return null;
  }
}
