import type { CasBucket, Versioned } from '../../adapters/jetstream/index.ts';
import type { Logger } from '../../domain/index.ts';
import type { Membership } from './membership.ts';

/** What taking and losing a thread mean beyond the bucket: the log fenced, the copy brought up, its work taken up or let go. */
export interface OwnershipHooks {
  /** This engine just wrote itself in as the thread's owner; throwing undoes the take. */
  acquired(threadId: string): Promise<void>;
  /** This engine no longer owns the thread: it let it go, another engine took it, or the log refused this one. */
  lost(threadId: string): void;
}

/** How many times a take is tried again when another engine's write got between the read and the write. */
const TAKE_ATTEMPTS = 5;

/**
 * Which engine owns which thread: a key per thread in a bucket, naming its
 * owner, written only by compare-and-set. A thread is taken when nobody
 * owns it or its owner is not alive (see `Membership`), let go when it has
 * nothing open and goes idle, and taken from a stale owner without its
 * consent: the log's own fence (`ClusterStore`) refuses whatever that owner
 * still tries to append, so two engines that both believe they own a thread
 * cannot both write it. Every engine keeps the whole directory from a
 * watch, so routing a request costs no round trip.
 */
export class Ownership {
  private readonly owners = new Map<string, Versioned>();
  /** The threads this engine owns, by the revision of its key. */
  private readonly mine = new Map<string, number>();
  /** Threads this engine wrote itself in for and is still bringing up (catching up, fencing): not yet served here. */
  private readonly acquiring = new Map<string, number>();
  private readonly taking = new Map<string, Promise<boolean>>();
  private watcher: { stop(): void; done: Promise<void> } | undefined;

  constructor(
    private readonly bucket: CasBucket,
    private readonly membership: Membership,
    private readonly hooks: OwnershipHooks,
    private readonly log: Logger,
  ) {}

  get engineId(): string {
    return this.membership.engineId;
  }

  async start(): Promise<this> {
    this.watcher = await this.bucket.watch((threadId, entry) => {
      if (entry) this.owners.set(threadId, entry);
      else this.owners.delete(threadId);
      // Another engine wrote itself in (or the key went) where this one thought it owned the thread: it was taken.
      const taken = (revision: number | undefined) => revision !== undefined && entry?.revision !== revision && entry?.value !== this.engineId;
      if (taken(this.acquiring.get(threadId))) this.acquiring.delete(threadId);
      const held = this.mine.get(threadId);
      if (taken(held)) {
        this.log.info({ threadId, by: entry?.value ?? null }, 'thread taken by another engine');
        this.drop(threadId);
      }
    });
    return this;
  }

  /** Whether this engine owns the thread now, as far as it knows. */
  holds(threadId: string): boolean {
    return this.mine.has(threadId);
  }

  /** The thread's owner as the directory has it (a few milliseconds behind at most), or `null`. */
  ownerOf(threadId: string): string | null {
    return this.owners.get(threadId)?.value ?? null;
  }

  /** Every thread the directory names an owner of. */
  directory(): Array<{ threadId: string; owner: string }> {
    return [...this.owners].map(([threadId, { value }]) => ({ threadId, owner: value }));
  }

  /** The threads this engine owns. */
  held(): string[] {
    return [...this.mine.keys()];
  }

  /**
   * Threads the directory names this engine for that it neither holds nor is
   * taking: it let go of them when its membership lapsed, or it is a new
   * process under the old id. The others see a live owner and leave them.
   */
  strays(): string[] {
    return [...this.owners.keys()].filter((threadId) => this.isStray(threadId));
  }

  private isStray(threadId: string): boolean {
    return this.owners.get(threadId)?.value === this.engineId && !this.mine.has(threadId) && !this.taking.has(threadId) && !this.acquiring.has(threadId);
  }

  /** Deletes a stray's key, so whichever engine needs the thread next takes it; nothing when it is no longer a stray. */
  async forsake(threadId: string): Promise<void> {
    const entry = this.owners.get(threadId);
    if (entry && this.isStray(threadId)) await this.bucket.delete(threadId, entry.revision);
  }

  /** Deletes the key of a thread whose owner `gone` is dead, if the directory still names it: the next engine to need the thread takes it. */
  async clear(threadId: string, gone: string): Promise<void> {
    const entry = this.owners.get(threadId);
    if (entry?.value === gone) await this.bucket.delete(threadId, entry.revision);
  }

  /**
   * Takes the thread if nobody owns it or its owner is gone (not alive, or
   * `gone`: an engine known not to answer); `false` when a live engine owns
   * it. Concurrent takes of one thread share one attempt.
   */
  take(threadId: string, gone?: string): Promise<boolean> {
    if (this.mine.has(threadId)) return Promise.resolve(true);
    const running = this.taking.get(threadId);
    if (running) return running;
    const attempt = this.attemptTake(threadId, gone).finally(() => this.taking.delete(threadId));
    this.taking.set(threadId, attempt);
    return attempt;
  }

  private async attemptTake(threadId: string, gone: string | undefined): Promise<boolean> {
    for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
      const seen = await this.bucket.get(threadId);
      if (seen !== null && seen.value !== this.engineId && seen.value !== gone && this.membership.isLive(seen.value)) {
        // The directory may not have heard of that owner yet: it has now, so the request goes there.
        if ((this.owners.get(threadId)?.revision ?? 0) < seen.revision) this.owners.set(threadId, seen);
        return false;
      }
      // Named after this engine already (a run before this one, or before its membership lapsed): taken anew all the same, fence and all.
      const revision = seen === null ? await this.bucket.create(threadId, this.engineId) : await this.bucket.update(threadId, this.engineId, seen.revision);
      if (revision === null) continue;
      this.owners.set(threadId, { value: this.engineId, revision });
      this.acquiring.set(threadId, revision);
      try {
        await this.hooks.acquired(threadId);
      } catch (error) {
        this.acquiring.delete(threadId);
        this.hooks.lost(threadId);
        await this.bucket.delete(threadId, revision).catch(() => false);
        throw error;
      }
      if (this.acquiring.get(threadId) !== revision) {
        // Another engine took it while this one was bringing it up.
        this.hooks.lost(threadId);
        return false;
      }
      this.acquiring.delete(threadId);
      this.mine.set(threadId, revision);
      if (seen !== null && seen.value !== this.engineId) this.log.info({ threadId, from: seen.value }, 'thread taken over');
      return true;
    }
    return false;
  }

  /** Lets the thread go (it has nothing open and went idle, or this engine stops), so another engine need not wait to take it. */
  async release(threadId: string): Promise<void> {
    const revision = this.mine.get(threadId);
    if (revision === undefined) return;
    this.drop(threadId);
    await this.bucket.delete(threadId, revision).catch(() => false);
  }

  /** Forgets that this engine owns the thread, whatever the bucket says (it was taken, or the log refused this engine). */
  drop(threadId: string): void {
    if (!this.mine.delete(threadId)) return;
    this.hooks.lost(threadId);
  }

  /** Forgets every thread: this engine's membership lapsed, so any of them may be another's now. */
  dropAll(): void {
    for (const threadId of [...this.mine.keys()]) this.drop(threadId);
  }

  async stop(): Promise<void> {
    this.watcher?.stop();
    await this.watcher?.done.catch(() => undefined);
    // The others may take them at once rather than when this engine's membership lapses.
    await Promise.all([...this.mine.keys()].map((threadId) => this.release(threadId)));
  }
}
