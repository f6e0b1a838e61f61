import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { CasBucket, ThreadLogStream } from '../../adapters/jetstream/index.ts';
import { JSON_TYPE, type Subjects, assertId, decode, encode } from '../../bus/index.ts';
import { type Bus, type BusSubscription, type Logger, type ReplicaStore, TurnloomError, errorFields, silentLogger } from '../../domain/index.ts';
import type { Engine } from '../engine/engine.ts';
import { ClusterStore } from './clusterStore.ts';
import { Membership } from './membership.ts';
import { PreferredOwners } from './placement.ts';
import { type Placement, RequestRouter, type Serve } from './requestRouter.ts';
import { ShardCopies } from './shardCopies.ts';
import { ShardOwnership } from './shardOwnership.ts';

export interface ClusterOptions {
  /** The NATS connection the engine serves on (its JetStream holds the log and the buckets). */
  nc: NatsConnection;
  bus: Bus;
  subjects: Subjects;
  /** This engine's folder: its copy of the shards it owns, and its read model. */
  local: ReplicaStore;
  /** Copies of the log and the buckets JetStream keeps (3 on a 3-node NATS cluster). */
  replicas: number;
  /** How many shards the log has when this engine makes it (default 64); a log made before keeps its own. */
  shards?: number;
  /** An engine silent this long counts as gone, and its shards are taken over (default 3 s). */
  memberTtlMs?: number;
  /** How large one answer may be (half the bus's payload limit): a list merged from every engine's part keeps to it. */
  replyBudgetBytes?: number;
  /** What `health` shows of this engine. */
  about?: Record<string, unknown>;
  log?: Logger;
}

/** The parts of the engine's server a cluster drives when it takes or loses a shard, or stops serving. */
export interface ClusterParts {
  engine: Engine;
  /** Takes up what a thread has open: lease clocks, deadlines, offers, repairs. */
  adopt(threadId: string): Promise<void>;
  /** Lets go of what this engine did for the thread: clocks, deadlines, watches. */
  forget(threadId: string): void;
  /** Whether the thread has something that keeps its shard here while idle (a watch). */
  busy(threadId: string): boolean;
  serve: { api: Serve; worker: Serve };
  /** The queue groups of the API and the workers: left while this engine cannot serve, so the bus hands their requests to the others. */
  intake: { pause(): void; resume(): void };
}

/** What `health` shows of the cluster, on any engine. */
export interface ClusterHealth {
  engineId: string;
  engines: string[];
  /** Shards this engine owns, of how many. */
  shards: { owned: number; of: number };
  /** Requests about a thread this engine served, passed on to its shard's owner, or took over from an owner gone silent. */
  requests: { servedHere: number; passedOn: number; takenOver: number };
  log: { stream: string; replicas: number; shards: number };
}

/** How often shards of dead owners are looked for and shards handed to the engine they belong to (also on every change of members). */
const SWEEP_MS = 500;
/** Shards taken at once after a failure. */
const TAKE_LANES = 8;
/** Shards handed on to a joining engine per sweep, at least (or a sixteenth of them): a join moves load over a few seconds, not in one burst. */
const HANDOVERS_PER_SWEEP = 4;
/** A shard whose take failed (its log could not be read or taken in) is tried again after this, doubling, up to a minute. */
const RETAKE_MS = 1_000;
/** How long a shard may go without a live owner before any engine, not only the preferred one, takes it. */
const ORPHAN_TAKEN_BY_ANY_MS = 10_000;
/** How long a thread found stale waits, at first, to be read again when nothing asks for it sooner. */
const STALE_READ_MS = 500;
/** How often a store that failed is tried again. */
const PROBE_MS = 2_000;
const DEFAULT_SHARDS = 64;
/** A late write's owner is told again after this long: an append JetStream still held the first time has landed by then. */
const REREAD_AGAIN_MS = 5_000;
const deploymentName = (prefix: string) => prefix.replace(/[^A-Za-z0-9_-]/g, '_');

/**
 * One engine of a cluster: the shared log (a JetStream stream, a subject per
 * thread under a subject per shard), membership and shard ownership
 * (JetStream KV buckets written by compare-and-set), this engine's copy of
 * the shards it owns (`ShardCopies`), and routing of requests to the owner
 * of their thread's shard (`RequestRouter`). Shards go to the live engines
 * by rendezvous hashing; an engine that dies has its shards taken by the
 * others within a membership TTL, and a joining engine is handed its share.
 * An engine that cannot serve (its membership lapsed, its folder cannot be
 * written) leaves the queue groups and its shards, answers `unavailable` to
 * what still reaches it, and comes back when it can.
 */
export class ClusterNode implements Placement {
  readonly store: ClusterStore;
  readonly router: RequestRouter;
  private readonly membership: Membership;
  private readonly ownership: ShardOwnership;
  private copies: ShardCopies | undefined;
  private parts: ClusterParts | undefined;
  private subscriptions: BusSubscription[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;
  private stopped = false;
  /** Why this engine serves nothing now; empty while it serves. */
  private readonly fenced = new Set<'membership' | 'store'>();
  private prober: NodeJS.Timeout | undefined;
  /**
   * Threads whose copy the log moved past (another engine wrote them, or an
   * append's outcome is unknown): read again before they are served, and
   * soon in any case (a thread nobody asks about may hold open work), each
   * with its timer.
   */
  private readonly stale = new Map<string, { timer: NodeJS.Timeout; waitMs: number }>();
  /** Threads this engine wrote, or may have, after it stopped serving their shard: their owners are told, once this engine is heard again. */
  private readonly lateWrites = new Set<string>();
  private telling: NodeJS.Timeout | undefined;
  /** Threads this engine took up or served, by shard: what it lets go of with the shard. */
  private readonly touched = new Map<number, Set<string>>();
  /** Shards whose take failed, when they may be tried again, and why. */
  private readonly backoff = new Map<number, { until: number; waitMs: number; why: string }>();
  /** Shards nobody alive owns, since when (monotonic): past a while, any engine takes one, not only the one rendezvous hashing prefers. */
  private readonly unowned = new Map<number, number>();
  /** When each live engine was first seen alive (monotonic): shards go to a joining engine once it has stayed a TTL. */
  private readonly since = new Map<string, number>();
  /** Each shard's preferred owner among the live engines, and among those that stayed a TTL: computed again only when they change. */
  private readonly preferredLive: PreferredOwners;
  private readonly preferredSettled: PreferredOwners;
  private readonly log: Logger;

  private constructor(
    private readonly options: ClusterOptions,
    private readonly logStream: ThreadLogStream,
    members: CasBucket,
    owners: CasBucket,
    readonly engineId: string,
    private readonly source: string,
  ) {
    this.log = options.log ?? silentLogger;
    this.store = new ClusterStore(options.local, logStream, engineId, {
      serves: (shard) => this.ownership.serves(shard),
      mayAppend: () => this.fenced.size === 0 && this.membership.holds(),
      stale: (threadId, why) => {
        this.log.warn({ threadId, why }, 'reading a thread again before its next write');
        this.markStale(threadId);
      },
      storeFailed: (error) => this.storeFailed(error),
      wroteLate: (threadId) => {
        this.lateWrites.add(threadId);
        if (this.fenced.size === 0) this.tellLateWrites();
      },
      appending: (shard) => this.copies?.appending(shard) ?? (() => undefined),
    });
    this.membership = new Membership(members, { engineId, about: options.about ?? {}, ttlMs: options.memberTtlMs ?? 3_000, log: this.log }, (member) => (member ? this.unfence('membership') : this.fence('membership')));
    this.preferredLive = new PreferredOwners(logStream.shards);
    this.preferredSettled = new PreferredOwners(logStream.shards);
    this.ownership = new ShardOwnership(owners, this.membership, logStream.shards, { acquired: (shard) => this.acquired(shard), lost: (shard, letGo) => this.lost(shard, letGo) }, this.log);
    this.router = new RequestRouter(options.bus, options.subjects, this, this.log, options.replyBudgetBytes ?? 512 * 1024);
  }

  /**
   * Opens the stream and buckets of the deployment (making them if they are
   * not there) and checks that the folder is a copy of this stream: a folder
   * that copied another one (the stream was made again) is refused.
   */
  static async open(options: ClusterOptions): Promise<ClusterNode> {
    const { nc, subjects, replicas, local } = options;
    if (nc.info?.jetstream !== true) {
      throw new TurnloomError('unavailable', `the NATS server at ${nc.getServer()} has no JetStream, where a cluster keeps its log: start it with JetStream enabled (nats-server -js, or jetstream {} in its configuration)`);
    }
    const name = deploymentName(subjects.prefix);
    const ttlMs = options.memberTtlMs ?? 3_000;
    const stem = subjects.logAll.slice(0, -2);
    // Engines started together race to make the same stream and buckets, and a replicated one elects its leader first: each is tried again for a while.
    const logStream = await persist(() => ThreadLogStream.open(nc, { name: `TURNLOOM_${name}_LOG`, stem, replicas, shards: options.shards ?? DEFAULT_SHARDS }));
    if (options.shards !== undefined && options.shards !== logStream.shards) {
      options.log?.warn({ asked: options.shards, shards: logStream.shards }, `the cluster's log was made with ${logStream.shards} shards, which it keeps: the count asked for is not used`);
    }
    const members = await persist(() => CasBucket.open(nc, { name: `TURNLOOM_${name}_ENGINES`, ttlMs, replicas }));
    const owners = await persist(() => CasBucket.open(nc, { name: `TURNLOOM_${name}_OWNERS`, ttlMs: 0, replicas }));
    const info = await persist(() => logStream.info());
    const source = `${logStream.name}@${info.created}`;
    const mark = local.readReplica();
    if (mark && mark.source !== source) {
      throw new TurnloomError(
        'conflict',
        `this engine's data folder copies another log (${mark.source}) than the cluster's (${source}): the stream was made again since; give this engine a new, empty data folder`,
        { copied: mark.source, stream: source },
      );
    }
    if (!mark && local.lastSeq() > 0) {
      throw new TurnloomError('conflict', "this data folder holds a single engine's threads, which are not in the cluster's log: an engine of a cluster needs an empty folder (or its own from before)", { stream: source });
    }
    const engineId = mark?.engineId ?? `e${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    assertId('engineId', engineId);
    if (!mark) await local.writeReplica({ engineId, source, positions: {} });
    return new ClusterNode(options, logStream, members, owners, engineId, source);
  }

  /**
   * Joins the cluster and starts serving requests addressed to this engine
   * or passed on by other engines; shards come to it by the sweep (those
   * nobody alive owns, and its share of the others) and on first use. The
   * server's API may serve once this resolves.
   */
  async start(parts: ClusterParts): Promise<void> {
    this.parts = parts;
    this.copies = new ShardCopies(this.logStream, parts.engine, this.options.local, { engineId: this.engineId, source: this.source }, this.log, (error) => this.storeFailed(error));
    this.copies.start();
    this.subscriptions = [...this.router.serveAddressed(parts.serve), this.options.bus.subscribe(this.options.subjects.engineCast('reread'), (message) => this.heardLateWrites(message.data))];
    await this.options.bus.flush();
    await persist(() => this.membership.start());
    await this.ownership.start();
    this.membership.onChange(() => this.sweep());
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweep();
    this.log.info({ engineId: this.engineId, engines: this.membership.live(), shards: this.logStream.shards }, 'engine joined the cluster');
  }

  shardOf(threadId: string): number {
    return this.logStream.shardOf(threadId);
  }

  notServing(): string | null {
    if (this.stopped) return 'it is stopping';
    if (this.fenced.has('store')) return 'its data folder cannot be written';
    if (this.fenced.has('membership')) return 'its membership lapsed';
    return null;
  }

  holds(shard: number): boolean {
    return this.ownership.holds(shard);
  }

  async prepare(threadId: string): Promise<boolean> {
    const shard = this.shardOf(threadId);
    const ready = this.ownership.ready(shard);
    if (!ready) return false;
    await ready;
    if (!this.ownership.serves(shard)) return false;
    this.touch(shard, threadId);
    if (this.stale.has(threadId)) await this.refresh(threadId);
    return this.ownership.serves(shard);
  }

  /** Reads a thread the log moved past again, and takes up what it has open now. */
  private async refresh(threadId: string): Promise<void> {
    const mark = this.stale.get(threadId);
    this.unmarkStale(threadId);
    try {
      this.store.fence(threadId, await this.copies!.catchUpThread(threadId));
    } catch (error) {
      this.markStale(threadId, mark?.waitMs);
      throw error;
    }
    await this.parts!.adopt(threadId);
  }

  /** The thread is read again at its next request, or when its timer fires, whichever comes first; a read that fails waits twice as long next time. */
  private markStale(threadId: string, lastWaitMs = STALE_READ_MS / 2): void {
    if (this.stale.has(threadId) || this.stopped) return;
    const waitMs = Math.min(30_000, lastWaitMs * 2);
    const timer = setTimeout(() => {
      if (!this.ownership.serves(this.shardOf(threadId))) return void this.unmarkStale(threadId);
      void this.prepare(threadId).catch((error: unknown) => this.log.warn({ threadId, ...errorFields(error) }, 'could not read a thread again'));
    }, waitMs);
    timer.unref();
    this.stale.set(threadId, { timer, waitMs });
  }

  private unmarkStale(threadId: string): void {
    clearTimeout(this.stale.get(threadId)?.timer);
    this.stale.delete(threadId);
  }

  liveOwnerOf(shard: number): string | null {
    const owner = this.ownership.ownerOf(shard);
    return owner !== null && this.membership.isLive(owner) ? owner : null;
  }

  isLive(engineId: string): boolean {
    return this.membership.isLive(engineId);
  }

  async take(shard: number, gone?: string): Promise<boolean> {
    const why = this.notServing();
    if (why !== null) throw TurnloomError.tryAgain(`engine ${this.engineId} serves nothing for now (${why}); try again`);
    const backoff = this.backoff.get(shard);
    if (backoff && backoff.until > performance.now() && !this.ownership.holds(shard)) {
      throw TurnloomError.tryAgain(`engine ${this.engineId} could not take shard ${shard} lately (${backoff.why}); try again`, { shard }, Math.ceil(backoff.until - performance.now()));
    }
    try {
      const taken = await this.ownership.take(shard, gone);
      this.backoff.delete(shard);
      return taken;
    } catch (error) {
      this.backOff(shard, error);
      throw error;
    }
  }

  /** A take that failed is not tried again, by the sweep or a request, for a while that doubles while it keeps failing (a minute at most). */
  private backOff(shard: number, error: unknown): void {
    const waitMs = Math.min(60_000, (this.backoff.get(shard)?.waitMs ?? RETAKE_MS / 2) * 2);
    const why = error instanceof Error ? error.message : String(error);
    this.backoff.set(shard, { until: performance.now() + waitMs, waitMs, why });
    this.log.warn({ shard, retryInMs: waitMs, error: why }, 'could not take a shard');
  }

  /** Takes the shard of a thread this engine is about to make (a sub-agent's: in its parent's shard, so normally held already). */
  takeThread = async (threadId: string): Promise<boolean> => (await this.take(this.shardOf(threadId))) && this.prepare(threadId);

  async owners(): Promise<Map<string, number[]>> {
    const byEngine = new Map<string, number[]>();
    const unowned: number[] = [];
    for (let shard = 0; shard < this.logStream.shards; shard++) {
      const owner = this.ownership.holds(shard) ? this.engineId : this.liveOwnerOf(shard);
      if (owner === null) unowned.push(shard);
      else byEngine.set(owner, [...(byEngine.get(owner) ?? []), shard]);
    }
    await this.inLanes(unowned, async (shard) => {
      if (!(await this.take(shard))) throw TurnloomError.tryAgain(`shard ${shard} is changing hands; try again`, { shard });
    });
    if (unowned.length > 0) byEngine.set(this.engineId, [...(byEngine.get(this.engineId) ?? []), ...unowned]);
    return byEngine;
  }

  async covers(shards: readonly number[]): Promise<boolean> {
    await Promise.all(shards.map((shard) => this.ownership.ready(shard)));
    return this.notServing() === null && shards.every((shard) => this.ownership.serves(shard));
  }

  positionOf(threadId: string): number {
    return this.options.local.firstEventSeq(threadId);
  }

  /** Whether this engine serves the thread's shard: the reactors act only on those. */
  owns = (threadId: string): boolean => this.ownership.serves(this.shardOf(threadId));

  health(): ClusterHealth {
    return {
      engineId: this.engineId,
      engines: this.membership.live(),
      shards: { owned: this.ownership.held().length, of: this.logStream.shards },
      requests: { ...this.router.counts },
      log: { stream: this.logStream.name, replicas: this.options.replicas, shards: this.logStream.shards },
    };
  }

  /** This engine wrote itself in as the shard's owner: its copy is brought up to the log, and each thread's fence is what the log holds of it. */
  private async acquired(shard: number): Promise<void> {
    this.store.unfenceShard(shard);
    for (const [threadId, last] of await this.copies!.catchUpShard(shard)) {
      this.store.fence(threadId, last);
      this.unmarkStale(threadId);
    }
    // Taken up once the shard is served (`whole`), so what adoption writes goes through a shard this engine now owns.
    setImmediate(() => {
      this.adoptShard(shard).catch((error: unknown) => {
        if (!this.stopped) this.log.error({ shard, ...errorFields(error) }, 'could not take up what a shard had open');
      });
    });
  }

  /** Takes up what the shard's threads have open: lease clocks, deadlines, offers, repairs. */
  private async adoptShard(shard: number): Promise<void> {
    await this.ownership.ready(shard);
    if (this.stopped || !this.ownership.serves(shard)) return;
    const open = new Set([...this.store.openTurns(), ...this.store.openReverts()].map(({ threadId }) => threadId));
    for (const threadId of open) {
      if (this.shardOf(threadId) !== shard || !this.ownership.serves(shard)) continue;
      this.touch(shard, threadId);
      await this.parts!.adopt(threadId).catch((error: unknown) => this.log.error({ threadId, ...errorFields(error) }, 'could not take up what a thread had open'));
    }
  }

  private touch(shard: number, threadId: string): void {
    let threads = this.touched.get(shard);
    if (!threads) this.touched.set(shard, (threads = new Set()));
    threads.add(threadId);
  }

  /**
   * This engine no longer owns the shard. Unless it let it go itself, it
   * learned late (another engine took it, or it stopped serving): what it
   * wrote meanwhile may be missing from the copy the new owner read, so the
   * threads it wrote or read while it owned the shard are told as late
   * writes (a thread read again for nothing costs its owner one look-up).
   */
  private lost(shard: number, letGo: boolean): void {
    const known = this.store.unfenceShard(shard);
    this.copies?.forget(shard);
    const threads = this.touched.get(shard) ?? new Set<string>();
    this.touched.delete(shard);
    if (!letGo) {
      for (const threadId of [...known, ...threads]) this.lateWrites.add(threadId);
      if (this.fenced.size === 0) this.tellLateWrites();
    }
    for (const { threadId } of [...this.options.local.openTurns(), ...this.options.local.openReverts()]) if (this.shardOf(threadId) === shard) threads.add(threadId);
    for (const threadId of threads) {
      this.unmarkStale(threadId);
      this.parts?.forget(threadId);
    }
  }

  /**
   * Tells the owners of the threads this engine wrote, or may have, after it
   * stopped serving their shards (appends on their way while it was paused
   * or cut off land when the link heals). Such a write is valid (its
   * thread's fence let it in), but its shard's owner never follows the log:
   * it reads those threads again and takes up what the writes opened. Told
   * twice, 5 s apart: an append still in JetStream's hands the first time
   * has landed by the second.
   */
  private tellLateWrites(): void {
    if (this.telling || this.lateWrites.size === 0 || this.fenced.size > 0) return;
    const threadIds = [...this.lateWrites];
    const tell = () => {
      // A thousand ids a message keeps each well under NATS's payload limit.
      for (let from = 0; from < threadIds.length; from += 1_000) {
        this.options.bus.publish(this.options.subjects.engineCast('reread'), encode({ from: this.engineId, threadIds: threadIds.slice(from, from + 1_000) }, JSON_TYPE));
      }
    };
    tell();
    this.telling = setTimeout(() => {
      this.telling = undefined;
      // Cut off again meanwhile: the second telling may not have been heard, so it waits for the next time this engine serves.
      if (this.fenced.size > 0) return;
      tell();
      for (const threadId of threadIds) this.lateWrites.delete(threadId);
      this.tellLateWrites();
    }, REREAD_AGAIN_MS);
  }

  /** Another engine wrote threads of shards this one may own now, after it lost them: each is read again. */
  private heardLateWrites(data: Uint8Array): void {
    let told: { from?: unknown; threadIds?: unknown };
    try {
      told = decode(data, JSON_TYPE) as typeof told;
    } catch {
      return;
    }
    if (told.from === this.engineId || !Array.isArray(told.threadIds)) return;
    for (const threadId of told.threadIds) {
      if (typeof threadId !== 'string' || !this.ownership.holds(this.shardOf(threadId))) continue;
      this.log.warn({ threadId, by: told.from }, 'another engine wrote a thread of a shard this one owns: reading it again');
      this.copies?.foreign(this.shardOf(threadId));
      this.markStale(threadId);
      void this.prepare(threadId).catch((error: unknown) => this.log.warn({ threadId, ...errorFields(error) }, 'could not read a thread again'));
    }
  }

  // ---------------------------------------------------------------- serving or not

  /** Stops serving: out of the queue groups, every shard let go (at once when its store failed, so the others need not wait for its membership to lapse). */
  private fence(why: 'membership' | 'store'): void {
    if (this.fenced.has(why) || this.stopped) return;
    const first = this.fenced.size === 0;
    this.fenced.add(why);
    this.log.warn({ engineId: this.engineId, why }, 'engine stops serving');
    if (first) this.parts?.intake.pause();
    if (why === 'store') void this.ownership.releaseAll().catch(() => undefined);
    else this.ownership.dropAll();
  }

  private unfence(why: 'membership' | 'store'): void {
    if (!this.fenced.delete(why) || this.fenced.size > 0 || this.stopped) return;
    this.log.info({ engineId: this.engineId }, 'engine serves again');
    this.parts?.intake.resume();
    this.tellLateWrites();
    this.sweep();
  }

  /** The folder failed: this engine leaves (the others take its shards at once) and tries the folder again until it takes writes. */
  private storeFailed(error: unknown): void {
    if (this.fenced.has('store') || this.stopped) return;
    this.log.error({ engineId: this.engineId, ...errorFields(error) }, 'the data folder cannot be written: leaving the cluster until it can');
    this.fence('store');
    void this.membership.suspend();
    this.prober = setInterval(() => void this.probeStore(), PROBE_MS);
  }

  private async probeStore(): Promise<void> {
    try {
      await this.options.local.checkWritable();
      await this.membership.resume();
    } catch {
      return;
    }
    clearInterval(this.prober);
    this.prober = undefined;
    this.unfence('store');
  }

  // ---------------------------------------------------------------- the sweep

  /**
   * Takes the shards nobody alive owns that rendezvous hashing gives this
   * engine, takes back its strays (shards in its name it let go of when it
   * stopped serving, that nobody took meanwhile), and hands on a few idle
   * shards that belong to another live engine now (one that joined).
   */
  private sweep(): void {
    if (this.sweeping || this.stopped || !this.parts || this.fenced.size > 0) return;
    this.sweeping = true;
    void this.sweepOnce()
      .catch((error: unknown) => this.log.warn({ ...errorFields(error) }, 'could not look for shards to take over'))
      .finally(() => {
        this.sweeping = false;
      });
  }

  private async sweepOnce(): Promise<void> {
    const live = this.membership.live();
    if (!live.includes(this.engineId)) return;
    const now = performance.now();
    for (const engineId of [...this.since.keys()]) if (!live.includes(engineId)) this.since.delete(engineId);
    for (const engineId of live) if (!this.since.has(engineId)) this.since.set(engineId, now);
    const settled = live.filter((engineId) => engineId === this.engineId || now - this.since.get(engineId)! >= this.membership.ttlMs);
    const strays = new Set(this.ownership.strays());
    const busy = this.busyShards();
    const toTake: Array<[number, string | undefined]> = [];
    const toHand: number[] = [];
    for (let shard = 0; shard < this.logStream.shards; shard++) {
      if (this.ownership.holds(shard)) {
        const preferred = this.preferredSettled.of(shard, settled);
        if (preferred !== this.engineId && preferred !== undefined && !busy.has(shard)) toHand.push(shard);
        continue;
      }
      const backoff = this.backoff.get(shard);
      if (backoff && backoff.until > now) continue;
      const owner = this.ownership.ownerOf(shard);
      const orphan = owner === null || !this.membership.isLive(owner);
      if (!orphan) {
        this.unowned.delete(shard);
      } else if (!this.unowned.has(shard)) {
        this.unowned.set(shard, now);
      }
      // The engine rendezvous hashing prefers takes an orphan at once; should it fail to (it runs another version, say), any engine does after a while.
      const overdue = orphan && now - this.unowned.get(shard)! >= ORPHAN_TAKEN_BY_ANY_MS;
      if (strays.has(shard) || (orphan && (overdue || this.preferredLive.of(shard, live) === this.engineId))) toTake.push([shard, owner ?? undefined]);
    }
    await this.inLanes(toTake, async ([shard, gone]) => {
      if (this.stopped || this.fenced.size > 0) return;
      try {
        if (await this.ownership.take(shard, gone)) this.unowned.delete(shard);
        this.backoff.delete(shard);
      } catch (error) {
        this.backOff(shard, error);
      }
    });
    for (const shard of toHand.slice(0, Math.max(HANDOVERS_PER_SWEEP, Math.ceil(this.logStream.shards / 16)))) {
      if (this.stopped || this.fenced.size > 0) return;
      await this.ownership.release(shard);
    }
  }

  /** Shards with something open, being written or watched here: handing one on would cost its next owner more than a read. */
  private busyShards(): Set<number> {
    const busy = new Set<number>();
    for (const { threadId } of [...this.store.openTurns(), ...this.store.openReverts()]) busy.add(this.shardOf(threadId));
    for (const shard of this.ownership.held()) {
      if (!this.ownership.serves(shard) || this.copies?.busy(shard)) busy.add(shard);
      else for (const threadId of this.touched.get(shard) ?? []) if (this.parts!.busy(threadId)) busy.add(shard);
    }
    return busy;
  }

  private async inLanes<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
    const queue = [...items];
    const lane = async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) await work(next);
    };
    await Promise.all(Array.from({ length: Math.min(TAKE_LANES, queue.length) }, lane));
  }

  /** Leaves the cluster: requests stop coming, owned shards are let go at once (the others take them), the copies' positions are written down. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    clearInterval(this.prober);
    clearTimeout(this.telling);
    for (const threadId of [...this.stale.keys()]) this.unmarkStale(threadId);
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
    await this.ownership.stop();
    await this.membership.stop();
    await this.copies?.stop();
  }
}

/** Tries a JetStream call again while it says `unavailable`, for up to half a minute. */
async function persist<T>(attempt: () => Promise<T>): Promise<T> {
  const until = Date.now() + 30_000;
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof TurnloomError && error.code === 'unavailable') || Date.now() > until) throw error;
      await sleep(Math.min(2_000, 100 * 2 ** tries));
    }
  }
}
