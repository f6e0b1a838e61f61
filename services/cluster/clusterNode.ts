import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { CasBucket, type LogMessage, ThreadLogStream } from '../../adapters/jetstream/index.ts';
import { type Subjects, assertId } from '../../bus/index.ts';
import { type Bus, type BusSubscription, type Logger, type ReplicaStore, TurnloomError, silentLogger } from '../../domain/index.ts';
import type { Engine } from '../engine/engine.ts';
import { ClusterStore } from './clusterStore.ts';
import { Membership } from './membership.ts';
import { Ownership } from './ownership.ts';
import { LogTailer } from './logTailer.ts';
import { preferredEngine } from './placement.ts';
import { type Placement, RequestRouter, type Serve } from './requestRouter.ts';

export interface ClusterOptions {
  /** The NATS connection the engine serves on (its JetStream holds the log and the buckets). */
  nc: NatsConnection;
  bus: Bus;
  subjects: Subjects;
  /** This engine's folder: its copy of every thread and its read model. */
  local: ReplicaStore;
  /** Copies of the log and the buckets JetStream keeps (3 on a 3-node NATS cluster). */
  replicas: number;
  /** An engine silent this long counts as gone, and its threads are taken over (default 3 s). */
  memberTtlMs?: number;
  /** What `health` shows of this engine. */
  about?: Record<string, unknown>;
  log?: Logger;
}

/** The parts of the engine's server a cluster drives when it takes or loses a thread. */
export interface ClusterParts {
  engine: Engine;
  /** Takes up what the thread has open: lease clocks, deadlines, offers, repairs. */
  adopt(threadId: string): Promise<void>;
  /** Lets go of what this engine did for the thread: clocks, deadlines, watches. */
  forget(threadId: string): void;
  /** Whether the thread has something that keeps it owned here while idle (a watch). */
  busy(threadId: string): boolean;
  serve: { api: Serve; worker: Serve };
}

/** What `health` shows of the cluster, on any engine. */
export interface ClusterHealth {
  engineId: string;
  engines: string[];
  ownedThreads: number;
  /** Requests about a thread this engine served, passed on to the thread's owner, or took over from an owner gone silent. */
  requests: { servedHere: number; passedOn: number; takenOver: number };
  log: { stream: string; replicas: number; position: number };
}

/** How often owners of the dead are looked for, and idle threads let go (also on every change of members). */
const SWEEP_MS = 500;
/** Threads taken over at once after a failure. */
const TAKE_LANES = 8;

/** How long a list waits for this engine's copy to reach the log's end before it answers `unavailable` rather than leave writes out. */
const CATCH_UP_ALL_MS = 5_000;
const deploymentName = (prefix: string) => prefix.replace(/[^A-Za-z0-9_-]/g, '_');

/**
 * One engine of a cluster: the shared log (a JetStream stream, a subject per
 * thread), membership and ownership (JetStream KV buckets written by
 * compare-and-set), this engine's copy of every thread (`LogTailer`), and
 * routing of requests to the owner of their thread (`RequestRouter`). An
 * engine takes a thread on first use when no live engine owns it, and the
 * threads of an engine that died are taken by the live ones, each thread by
 * one of them (rendezvous hashing), within a membership TTL.
 */
export class ClusterNode implements Placement {
  readonly store: ClusterStore;
  readonly router: RequestRouter;
  private readonly membership: Membership;
  private readonly ownership: Ownership;
  private tailer: LogTailer | undefined;
  private parts: ClusterParts | undefined;
  private relays: BusSubscription | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;
  private stopped = false;
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
    this.store = new ClusterStore(options.local, logStream, engineId, (threadId, why) => {
      this.log.warn({ threadId, why }, 'letting go of a thread');
      this.ownership.drop(threadId);
    });
    this.membership = new Membership(members, { engineId, about: options.about ?? {}, ttlMs: options.memberTtlMs ?? 3_000, log: this.log }, () => this.ownership.dropAll());
    this.ownership = new Ownership(owners, this.membership, { acquired: (threadId) => this.acquired(threadId), lost: (threadId) => this.lost(threadId) }, this.log);
    this.router = new RequestRouter(options.bus, options.subjects, this, this.log);
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
    // Engines started together race to make the same stream and buckets, and a replicated one elects its leader first: each is tried again for a while.
    const logStream = await persist(() => ThreadLogStream.open(nc, { name: `TURNLOOM_${name}_LOG`, subjectOf: (threadId) => subjects.log(threadId), subjects: subjects.logAll, replicas }));
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
    if (!mark) await local.writeReplica({ engineId, source, position: 0 });
    return new ClusterNode(options, logStream, members, owners, engineId, source);
  }

  /**
   * Copies what the log holds that the folder lacks, joins the cluster and
   * starts serving requests passed on by other engines. The server's API
   * may serve once this resolves.
   */
  async start(parts: ClusterParts): Promise<void> {
    this.parts = parts;
    this.tailer = new LogTailer(this.logStream, parts.engine, this.options.local, { engineId: this.engineId, source: this.source }, (message) => this.heardForeign(message), this.log);
    await this.tailer.start();
    this.relays = this.router.serveRelays(parts.serve);
    await this.options.bus.flush();
    await persist(() => this.membership.start());
    await this.ownership.start();
    this.membership.onChange(() => this.sweep());
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweep();
    this.log.info({ engineId: this.engineId, engines: this.membership.live(), position: this.tailer.position }, 'engine joined the cluster');
  }

  holds(threadId: string): boolean {
    return this.ownership.holds(threadId);
  }

  liveOwnerOf(threadId: string): string | null {
    const owner = this.ownership.ownerOf(threadId);
    return owner !== null && this.membership.isLive(owner) ? owner : null;
  }

  isLive(engineId: string): boolean {
    return this.membership.isLive(engineId);
  }

  /** Takes the thread and takes up what it has open; `false` when a live engine owns it. */
  async take(threadId: string, gone?: string): Promise<boolean> {
    if (this.stopped) throw new TurnloomError('unavailable', `engine ${this.engineId} is stopping; try again`);
    if (this.ownership.holds(threadId)) return true;
    if (!(await this.ownership.take(threadId, gone))) return false;
    // Taken up after the take, so what adoption writes goes through a thread this engine now owns.
    this.parts?.adopt(threadId).catch((error: unknown) => this.log.error({ threadId, error: String(error) }, 'could not take up what a thread had open'));
    return true;
  }

  async catchUp(threadId: string): Promise<void> {
    await this.tailer!.catchUpThread(threadId);
  }

  async catchUpAll(): Promise<void> {
    const { lastSeq } = await this.logStream.info();
    if (!(await this.tailer!.reachWithin(lastSeq, CATCH_UP_ALL_MS))) {
      throw new TurnloomError('unavailable', `engine ${this.engineId}'s copy is behind the log (at ${this.tailer!.position} of ${lastSeq}); try again`);
    }
  }

  /** Whether this engine owns the thread: the reactors act only on those. */
  owns = (threadId: string): boolean => this.ownership.holds(threadId);

  health(): ClusterHealth {
    return {
      engineId: this.engineId,
      engines: this.membership.live(),
      ownedThreads: this.ownership.held().length,
      requests: { ...this.router.counts },
      log: { stream: this.logStream.name, replicas: this.options.replicas, position: this.tailer?.position ?? 0 },
    };
  }

  /**
   * This engine wrote itself in as the owner: its copy of the thread is
   * brought up to the log, and its mark appended, fenced by the last message
   * it read, so whatever a stale owner still appends is refused from now on.
   */
  private async acquired(threadId: string): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const last = await this.tailer!.catchUpThread(threadId);
      try {
        const mark = await this.logStream.append(threadId, { kind: 'owner', by: this.engineId, at: Date.now() }, last, `owner:${this.engineId}:${randomUUID()}`);
        this.store.fence(threadId, mark.seq);
        return;
      } catch (error) {
        // The stale owner appended after the last message read: read again.
        if (!(error instanceof TurnloomError && error.code === 'fenced')) throw error;
      }
    }
    throw new TurnloomError('unavailable', `thread ${threadId} kept moving while engine ${this.engineId} took it; try again`, { threadId });
  }

  private lost(threadId: string): void {
    this.store.unfence(threadId);
    this.parts?.forget(threadId);
  }

  /** A message on a thread this engine owns that it did not append, past its own last one: another engine has the thread now. */
  private heardForeign(message: LogMessage): void {
    const fence = this.store.fenceOf(message.threadId);
    if (fence === undefined || message.seq <= fence || !this.ownership.holds(message.threadId)) return;
    this.log.warn({ threadId: message.threadId, seq: message.seq }, 'another engine wrote a thread this one owned: letting it go');
    this.ownership.drop(message.threadId);
  }

  /**
   * Takes the threads whose owner is gone and that have something open (an
   * open turn or revert in the copy), each by the live engine rendezvous
   * hashing prefers, which also clears a dead owner's idle ones; settles
   * the threads still in its own name that it does not hold, and lets go of
   * threads this engine owns that went idle.
   */
  private sweep(): void {
    if (this.sweeping || this.stopped || !this.parts) return;
    this.sweeping = true;
    void this.sweepOnce()
      .catch((error: unknown) => this.log.warn({ error: String(error) }, 'could not look for threads to take over'))
      .finally(() => {
        this.sweeping = false;
      });
  }

  private async sweepOnce(): Promise<void> {
    const engine = this.parts!.engine;
    const live = this.membership.live();
    if (!live.includes(this.engineId)) return;
    const open = new Set([...engine.listOpenTurns(), ...engine.listOpenReverts()].map(({ threadId }) => threadId));
    const orphans = new Map<string, string | undefined>();
    // A dead owner's idle thread is not taken (a take costs two KV writes, a read of its log and a mark): its key goes,
    // and whichever engine needs it next takes it on first use. One that turns out open once the copy catches up is taken below.
    const idle: Array<[string, string]> = [];
    for (const { threadId, owner } of this.ownership.directory()) {
      if (owner === this.engineId || this.membership.isLive(owner)) continue;
      if (open.has(threadId)) orphans.set(threadId, owner);
      else if (preferredEngine(threadId, live) === this.engineId) idle.push([threadId, owner]);
    }
    for (const threadId of open) {
      if (!this.ownership.holds(threadId) && this.liveOwnerOf(threadId) === null && !orphans.has(threadId)) orphans.set(threadId, this.ownership.ownerOf(threadId) ?? undefined);
    }
    // Only this engine can settle its strays: an open one it takes back, an idle one (a sub-agent's thread made just before a crash, its turn not yet started) it lets go, so the engine that needs it can take it.
    const strays = this.ownership.strays();
    const mine: Array<[string, string | undefined]> = strays.filter((threadId) => open.has(threadId)).map((threadId) => [threadId, undefined]);
    mine.push(...[...orphans].filter(([threadId]) => preferredEngine(threadId, live) === this.engineId));
    const lane = async () => {
      for (let next = mine.shift(); next && !this.stopped; next = mine.shift()) {
        const [threadId, gone] = next;
        await this.take(threadId, gone).catch((error: unknown) => this.log.warn({ threadId, error: String(error) }, 'could not take over a thread'));
      }
    };
    await Promise.all(Array.from({ length: TAKE_LANES }, lane));
    for (const [threadId, gone] of idle) {
      if (this.stopped) return;
      await this.ownership.clear(threadId, gone).catch((error: unknown) => this.log.warn({ threadId, error: String(error) }, 'could not clear a dead owner’s key'));
    }
    for (const threadId of strays) {
      if (this.stopped) return;
      if (!open.has(threadId)) await this.ownership.forsake(threadId).catch((error: unknown) => this.log.warn({ threadId, error: String(error) }, 'could not let go of a thread'));
    }
    const reverting = new Set(engine.listOpenReverts().map(({ threadId }) => threadId));
    for (const threadId of this.ownership.held()) {
      if (this.stopped) return;
      // Passivated by the engine (idle), with nothing open and nobody watching it here.
      const idle = !engine.isLoaded(threadId) && !engine.summary(threadId)?.openTurnId && !reverting.has(threadId) && !this.parts!.busy(threadId);
      if (idle) await this.ownership.release(threadId);
    }
  }

  /** Leaves the cluster: requests stop coming, owned threads are let go at once (the others take what is open), the copy's position is written down. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    this.relays?.unsubscribe();
    await this.ownership.stop();
    await this.membership.stop();
    await this.tailer?.stop();
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
