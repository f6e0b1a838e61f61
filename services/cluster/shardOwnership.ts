import { setTimeout as sleep } from 'node:timers/promises';
import type { CasBucket, Versioned } from '../../adapters/jetstream/index.ts';
import { type Logger, TurnloomError } from '../../domain/index.ts';
import type { Membership } from './membership.ts';

/** What taking and losing a shard mean beyond the bucket: the copy brought up and its work taken up, or let go. */
export interface ShardHooks {
  /** This engine just wrote itself in as the shard's owner: bring its copy up to the log and take up what is open; throwing undoes the take. */
  acquired(shard: number): Promise<void>;
  /** This engine no longer owns the shard: it let it go (`letGo`), or learned late that it lost it (another engine took it, or it stopped serving). */
  lost(shard: number, letGo: boolean): void;
}

/** How many times a take is tried again when another engine's write got between the read and the write. */
const TAKE_ATTEMPTS = 5;

const keyOf = (shard: number) => `s${shard}`;
const shardOfKey = (key: string): number | undefined => (/^s\d+$/.test(key) ? Number(key.slice(1)) : undefined);

/** A shard this engine owns: the revision of its key, and whether its copy is whole yet (`ready` settles when it is). */
interface Held {
  revision: number;
  ready: Promise<void>;
  whole: boolean;
}

/**
 * Which engine owns which shard: a key per shard in a bucket, naming its
 * owner, written only by compare-and-set; the key's revision is the
 * ownership's epoch. A shard is taken when nobody owns it or its owner is
 * not alive (see `Membership`), and taken from a stale owner without its
 * consent: each thread's log is fenced by its own last sequence
 * (`ClusterStore`), so two engines that both believe they own a shard never
 * both write one state of a thread. Every engine keeps the whole directory
 * (a key per shard, not per thread) from one watch of the bucket, so routing
 * a request costs no round trip.
 */
export class ShardOwnership {
  private readonly owners = new Map<number, Versioned>();
  private readonly mine = new Map<number, Held>();
  private readonly taking = new Map<number, Promise<boolean>>();
  private watcher: { stop(): void; done: Promise<void> } | undefined;
  private stopped = false;

  constructor(
    private readonly bucket: CasBucket,
    private readonly membership: Membership,
    readonly shardCount: number,
    private readonly hooks: ShardHooks,
    private readonly log: Logger,
  ) {}

  get engineId(): string {
    return this.membership.engineId;
  }

  async start(): Promise<this> {
    await (await this.follow()).caughtUp;
    return this;
  }

  /** One watch of the bucket for as long as the engine runs, followed again whenever it ends; the directory as it is comes first. */
  private async follow(): Promise<{ caughtUp: Promise<void> }> {
    const watcher = await this.bucket.watch((key, entry) => {
      const shard = shardOfKey(key);
      if (shard === undefined) return;
      const known = this.owners.get(shard);
      // A write of this engine's own may have put a newer revision here already (see attemptTake).
      if (entry && known && known.revision > entry.revision) return;
      if (entry) this.owners.set(shard, entry);
      else this.owners.delete(shard);
      const held = this.mine.get(shard);
      // Another engine wrote itself in (or the key went) where this one thought it owned the shard: it was taken.
      if (held && entry?.revision !== held.revision && entry?.value !== this.engineId) {
        this.log.info({ shard, by: entry?.value ?? null }, 'shard taken by another engine');
        this.drop(shard);
      }
    });
    this.watcher = watcher;
    void watcher.done
      .catch((error: unknown) => this.log.debug({ error: error instanceof Error ? error.message : String(error) }, 'the ownership watch ended'))
      .then(() => this.rewatch());
    return watcher;
  }

  private async rewatch(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      await sleep(Math.min(5_000, 250 * 2 ** attempt));
      if (this.stopped) return;
      try {
        await this.follow();
        return;
      } catch (error) {
        this.log.debug({ error: error instanceof Error ? error.message : String(error) }, 'could not watch the shards’ owners');
      }
    }
  }

  /** Whether this engine owns the shard now, as far as it knows (its copy may still be coming up: see `ready`). */
  holds(shard: number): boolean {
    return this.mine.has(shard);
  }

  /** Whether this engine owns the shard and its copy is whole. */
  serves(shard: number): boolean {
    return this.mine.get(shard)?.whole ?? false;
  }

  /** Settles once the shard's copy is whole; `undefined` when this engine does not own it. */
  ready(shard: number): Promise<void> | undefined {
    return this.mine.get(shard)?.ready;
  }

  /** The shard's owner as the directory has it (a few milliseconds behind at most), or `null`. */
  ownerOf(shard: number): string | null {
    return this.owners.get(shard)?.value ?? null;
  }

  /** The shards this engine owns. */
  held(): number[] {
    return [...this.mine.keys()];
  }

  /**
   * Shards the directory names this engine for that it does not hold: it let
   * go of them when it stopped serving (its membership lapsed, its disk
   * failed), or it is a new process under the old id. The others see a live
   * owner and leave them, so only this engine settles them.
   */
  strays(): number[] {
    return [...this.owners].filter(([shard, { value }]) => value === this.engineId && !this.mine.has(shard) && !this.taking.has(shard)).map(([shard]) => shard);
  }

  /**
   * Takes the shard if nobody owns it or its owner is gone (not alive, or
   * `gone`: an engine known not to answer); `false` when a live engine owns
   * it. Concurrent takes of one shard share one attempt. Resolves once the
   * shard's copy is whole.
   */
  take(shard: number, gone?: string): Promise<boolean> {
    const held = this.mine.get(shard);
    if (held) return held.ready.then(() => this.mine.get(shard) === held);
    const running = this.taking.get(shard);
    if (running) return running;
    const attempt = this.attemptTake(shard, gone).finally(() => this.taking.delete(shard));
    this.taking.set(shard, attempt);
    return attempt;
  }

  private async attemptTake(shard: number, gone: string | undefined): Promise<boolean> {
    for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
      const seen = await this.bucket.get(keyOf(shard));
      if (seen !== null && seen.value !== this.engineId && seen.value !== gone && this.membership.isLive(seen.value)) {
        // The directory may not have heard of that owner yet: it has now, so requests go there.
        if ((this.owners.get(shard)?.revision ?? 0) < seen.revision) this.owners.set(shard, seen);
        return false;
      }
      // Named after this engine already (a run before this one, or before it stopped serving): taken anew all the same.
      const revision = seen === null ? await this.bucket.create(keyOf(shard), this.engineId) : await this.bucket.update(keyOf(shard), this.engineId, seen.revision);
      if (revision === null) continue;
      // The watch may have brought a newer write already (another engine's, after this one): it is not undone here.
      if ((this.owners.get(shard)?.revision ?? 0) < revision) this.owners.set(shard, { value: this.engineId, revision });
      let whole!: () => void;
      const held: Held = { revision, ready: new Promise<void>((resolve) => (whole = resolve)), whole: false };
      this.mine.set(shard, held);
      if (this.ownerOf(shard) !== this.engineId) {
        // Taken from this engine between its write and now: it never owned it.
        this.mine.delete(shard);
        whole();
        return false;
      }
      try {
        await this.hooks.acquired(shard);
      } catch (error) {
        if (this.mine.get(shard) === held) {
          this.mine.delete(shard);
          this.hooks.lost(shard, true);
        }
        whole();
        await this.bucket.delete(keyOf(shard), revision).catch(() => false);
        throw error;
      }
      whole();
      if (this.mine.get(shard) !== held) return false;
      held.whole = true;
      if (seen !== null && seen.value !== this.engineId) this.log.info({ shard, from: seen.value }, 'shard taken over');
      return true;
    }
    throw TurnloomError.tryAgain(`shard ${shard} kept changing hands while engine ${this.engineId} took it; try again`, { shard });
  }

  /** Lets the shard go (this engine stops, or hands it to the engine it belongs to now), so the next owner need not wait to take it. */
  async release(shard: number): Promise<void> {
    const held = this.mine.get(shard);
    if (!held) return;
    this.drop(shard, true);
    await this.bucket.delete(keyOf(shard), held.revision).catch(() => false);
  }

  /** Deletes a stray's key, so that whichever engine should own the shard takes it. */
  async forsake(shard: number): Promise<void> {
    const entry = this.owners.get(shard);
    if (entry?.value === this.engineId && !this.mine.has(shard)) await this.bucket.delete(keyOf(shard), entry.revision);
  }

  /** Forgets that this engine owns the shard, whatever the bucket says (it was taken, or this engine stopped serving; or `letGo`, by its own choice). */
  drop(shard: number, letGo = false): void {
    if (!this.mine.delete(shard)) return;
    this.hooks.lost(shard, letGo);
  }

  /** Forgets every shard: this engine stops serving, so any of them may be another's now. */
  dropAll(): void {
    for (const shard of [...this.mine.keys()]) this.drop(shard);
  }

  /** Lets every shard go at once (the others take them at once rather than when this engine's membership lapses). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.mine.keys()].map((shard) => this.release(shard)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.stop();
    await this.watcher?.done.catch(() => undefined);
    await this.releaseAll();
  }
}
