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

/**
 * Which engines of the cluster are alive: each keeps a key of its own in a
 * bucket whose TTL makes a key its engine stopped renewing lapse (nats-server
 * 2.9 has no TTL per key), renewed by compare-and-set. An engine whose key
 * lapsed, or that could not renew it for a TTL (it was paused, or cut off),
 * is told to let go of every thread before it counts itself in again: the
 * others may have taken them meanwhile.
 */
export class Membership {
  private revision: number | null = null;
  private renewedAt = 0;
  private members: string[] = [];
  private renewer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private renewing = false;
  private polling = false;
  private stopped = false;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly bucket: CasBucket,
    private readonly options: MembershipOptions,
    /** This engine's key lapsed: every thread it thinks it owns may be another's now. */
    private readonly onLapsed: () => void,
  ) {}

  get engineId(): string {
    return this.options.engineId;
  }

  get ttlMs(): number {
    return this.options.ttlMs;
  }

  async start(): Promise<this> {
    await this.join();
    await this.refresh();
    this.renewer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.options.ttlMs / 3)));
    this.poller = setInterval(() => void this.poll(), Math.max(50, Math.floor(this.options.ttlMs / 6)));
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

  /** Whether this engine's key was renewed within its TTL: past it, the others may count it gone. */
  private holds(): boolean {
    return this.revision !== null && Date.now() - this.renewedAt < this.options.ttlMs;
  }

  private value(): string {
    return JSON.stringify({ engineId: this.options.engineId, ...this.options.about });
  }

  private async join(): Promise<void> {
    const created = await this.bucket.create(this.options.engineId, this.value());
    if (created !== null) {
      this.revision = created;
    } else {
      // A key of this engine's is still there: a run before this one (the id is the data folder's), not yet lapsed.
      const seen = await this.bucket.get(this.options.engineId);
      this.revision = seen ? await this.bucket.update(this.options.engineId, this.value(), seen.revision) : await this.bucket.create(this.options.engineId, this.value());
    }
    if (this.revision === null) throw new TurnloomError('unavailable', `engine ${this.options.engineId} could not write its membership key`);
    this.renewedAt = Date.now();
  }

  private async renew(): Promise<void> {
    if (this.stopped || this.renewing) return;
    this.renewing = true;
    try {
      // Silent past its TTL (paused, or cut off): the others may have counted it gone, whatever the key says now.
      const stale = Date.now() - this.renewedAt >= this.options.ttlMs;
      const revision = stale || this.revision === null ? null : await this.bucket.update(this.options.engineId, this.value(), this.revision);
      if (revision !== null) {
        this.revision = revision;
        this.renewedAt = Date.now();
        return;
      }
      if (this.revision !== null) this.options.log.warn({ engineId: this.options.engineId, silentMs: Date.now() - this.renewedAt }, 'membership lapsed: letting go of every thread');
      this.revision = null;
      this.onLapsed();
      await this.join();
    } catch (error) {
      this.options.log.warn({ error: error instanceof Error ? error.message : String(error) }, 'could not renew membership');
    } finally {
      this.renewing = false;
    }
  }

  private async poll(): Promise<void> {
    if (this.stopped || this.polling) return;
    this.polling = true;
    try {
      await this.refresh();
    } catch (error) {
      this.options.log.debug({ error: error instanceof Error ? error.message : String(error) }, 'could not list members');
    } finally {
      this.polling = false;
    }
  }

  private async refresh(): Promise<void> {
    const members = (await this.bucket.keys()).sort();
    const changed = members.join(',') !== this.members.join(',');
    this.members = members;
    if (changed) for (const listener of this.listeners) listener();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.renewer);
    clearInterval(this.poller);
    if (this.revision !== null) await this.bucket.delete(this.options.engineId, this.revision).catch(() => false);
    this.revision = null;
  }
}
