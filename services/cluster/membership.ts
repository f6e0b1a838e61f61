import { setTimeout as sleep } from 'node:timers/promises';
import type { CasBucket } from '../../adapters/jetstream/index.ts';
import { type Logger, TurnloomError } from '../../domain/index.ts';

export interface MembershipOptions {
  engineId: string;
  /** What the engine says of itself (host, pid, when it started): shown by `health`. */
  about: Record<string, unknown>;
  /** A member silent this long is gone (the bucket's TTL); it renews three times as often. */
  ttlMs: number;
  log: Logger;
}

/** A clock that never jumps: leases and silences are measured on it, never on the wall clock. */
const monotonic = (): number => performance.now();

/** After how many TTLs of silence an engine is forgotten altogether. */
const FORGET_AFTER_TTLS = 10;

/** The first wait before following the bucket again after its watch ended; it doubles up to the last. */
const REWATCH_MS = [250, 500, 1_000, 2_000, 5_000] as const;

/**
 * Which engines of the cluster are alive: each keeps a key of its own in a
 * bucket whose TTL makes a key its engine stopped renewing lapse (nats-server
 * 2.9 has no TTL per key), renewed by compare-and-set. An engine whose key
 * lapsed, or that could not renew it for a TTL (it was paused, or cut off),
 * is told to let go of every thread before it counts itself in again: the
 * others may have taken them meanwhile.
 *
 * The others are followed through one watch of the bucket, not by listing
 * its keys (each listing is a JetStream consumer of its own: three idle
 * engines made some 360 a minute). nats-server 2.9 says nothing when a key
 * lapses, so a member is gone once the watch has brought a TTL's worth of
 * this engine's own renewals and none of its: measured on what the watch
 * delivers, a watch that falls behind never makes the others look dead.
 */
export class Membership {
  private revision: number | null = null;
  /** When the renewal that holds now was sent (monotonic). */
  private renewedAt = 0;
  private members: string[] = [];
  /** When the watch last brought each engine's write (monotonic). */
  private readonly seen = new Map<string, number>();
  private watcher: { stop(): void; done: Promise<void> } | undefined;
  private rewatches = 0;
  private renewer: NodeJS.Timeout | undefined;
  private checker: NodeJS.Timeout | undefined;
  private renewing = false;
  private stopped = false;
  private readonly listeners = new Set<() => void>();

  /** Left on purpose (`suspend`): not renewed, and not joined again until `resume`. */
  private suspended = false;

  constructor(
    private readonly bucket: CasBucket,
    private readonly options: MembershipOptions,
    /**
     * This engine stopped or started counting as a member: `false` when its
     * key lapsed (every shard it thinks it owns may be another's now), `true`
     * when it is written again.
     */
    private readonly onStanding: (member: boolean) => void,
  ) {}

  get engineId(): string {
    return this.options.engineId;
  }

  get ttlMs(): number {
    return this.options.ttlMs;
  }

  async start(): Promise<this> {
    await this.join();
    // The members there already come first: only once they are in does this engine know who is alive.
    await (await this.follow()).caughtUp;
    this.check();
    this.renewer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.options.ttlMs / 3)));
    this.checker = setInterval(() => this.check(), Math.max(50, Math.floor(this.options.ttlMs / 6)));
    return this;
  }

  /** Whether that engine counts as alive now (this one does while it runs and its key holds). */
  isLive(engineId: string): boolean {
    return engineId === this.options.engineId ? this.holds() : this.members.includes(engineId);
  }

  /** The engines alive now, this one included while its key holds, sorted. */
  live(): string[] {
    return this.holds() ? [...new Set([...this.members, this.options.engineId])].sort() : this.members.filter((id) => id !== this.options.engineId);
  }

  /** Called when an engine joins or leaves (as the bucket shows it). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether this engine's key was renewed within its TTL: past it, the others may count it gone (and it must not write on its belief). */
  holds(): boolean {
    return this.revision !== null && monotonic() - this.renewedAt < this.options.ttlMs;
  }

  private value(): string {
    return JSON.stringify({ engineId: this.options.engineId, ...this.options.about });
  }

  private async join(): Promise<void> {
    const sentAt = monotonic();
    const created = await this.bucket.create(this.options.engineId, this.value());
    if (created !== null) {
      this.revision = created;
    } else {
      // A key of this engine's is still there: a run before this one (the id is the data folder's), not yet lapsed.
      const seen = await this.bucket.get(this.options.engineId);
      this.revision = seen ? await this.bucket.update(this.options.engineId, this.value(), seen.revision) : await this.bucket.create(this.options.engineId, this.value());
    }
    if (this.revision === null) throw new TurnloomError('unavailable', `engine ${this.options.engineId} could not write its membership key`);
    this.renewedAt = sentAt;
  }

  private async renew(): Promise<void> {
    if (this.stopped || this.renewing || this.suspended) return;
    this.renewing = true;
    try {
      // Silent past its TTL (paused, or cut off): the others may have counted it gone, whatever the key says now.
      const sentAt = monotonic();
      const stale = sentAt - this.renewedAt >= this.options.ttlMs;
      const revision = stale || this.revision === null ? null : await this.bucket.update(this.options.engineId, this.value(), this.revision);
      if (revision !== null) {
        this.revision = revision;
        // The key's TTL runs from when the server wrote it, which is after this was sent: the lease is counted from the send.
        this.renewedAt = sentAt;
        return;
      }
      if (this.revision !== null) {
        this.options.log.warn({ engineId: this.options.engineId, silentMs: Math.round(monotonic() - this.renewedAt) }, 'membership lapsed: letting go of every shard');
        this.revision = null;
        this.onStanding(false);
      }
      await this.join();
      this.options.log.info({ engineId: this.options.engineId }, 'membership written again');
      this.onStanding(true);
    } catch (error) {
      this.options.log.warn({ error: error instanceof Error ? error.message : String(error) }, 'could not renew membership');
    } finally {
      this.renewing = false;
    }
  }

  /** Leaves the cluster for now (this engine cannot serve: its disk failed, say): the others count it gone at once. */
  async suspend(): Promise<void> {
    this.suspended = true;
    const revision = this.revision;
    this.revision = null;
    if (revision !== null) await this.bucket.delete(this.options.engineId, revision).catch(() => false);
  }

  /** Joins again after `suspend`; throws when the bucket cannot be written yet. */
  async resume(): Promise<void> {
    if (!this.suspended) return;
    await this.join();
    this.suspended = false;
  }

  /** One watch of the bucket for as long as the engine runs: followed again, after a growing wait, whenever it ends. */
  private async follow(): Promise<{ caughtUp: Promise<void> }> {
    const watcher = await this.bucket.watch((key, entry) => {
      this.rewatches = 0;
      if (entry) this.seen.set(key, monotonic());
      else this.seen.delete(key);
      this.check();
    });
    this.watcher = watcher;
    void watcher.done
      .catch((error: unknown) => this.options.log.debug({ error: error instanceof Error ? error.message : String(error) }, 'the membership watch ended'))
      .then(() => this.rewatch());
    return watcher;
  }

  private async rewatch(): Promise<void> {
    while (!this.stopped) {
      await sleep(REWATCH_MS[Math.min(this.rewatches++, REWATCH_MS.length - 1)]);
      if (this.stopped) return;
      try {
        await this.follow();
        return;
      } catch (error) {
        this.options.log.debug({ error: error instanceof Error ? error.message : String(error) }, 'could not watch the members');
      }
    }
  }

  /** The members as the watch shows them: gone once its own key came back a TTL later than theirs, or deleted. */
  private check(): void {
    const reference = this.seen.get(this.options.engineId) ?? monotonic();
    // nats-server 2.9 says nothing of a key that lapsed: an engine long gone is forgotten here, or the map would keep every engine that ever ran.
    for (const [engineId, at] of this.seen) if (engineId !== this.options.engineId && reference - at > FORGET_AFTER_TTLS * this.options.ttlMs) this.seen.delete(engineId);
    const members = [...this.seen]
      .filter(([engineId, at]) => engineId === this.options.engineId || reference - at < this.options.ttlMs)
      .map(([engineId]) => engineId)
      .sort();
    const changed = members.join(',') !== this.members.join(',');
    this.members = members;
    if (changed) for (const listener of this.listeners) listener();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.renewer);
    clearInterval(this.checker);
    this.watcher?.stop();
    if (this.revision !== null) await this.bucket.delete(this.options.engineId, this.revision).catch(() => false);
    this.revision = null;
  }
}
