import { JSON_TYPE, type Subjects, contentTypeOf, decode, encode, isInbox } from '../../bus/index.ts';
import { type Bus, BusError, type BusMessage, type BusSubscription, type ErrorBody, type Logger, type StoredEvent, TurnloomError, type TurnView, type WorkerProcess, errorFields, silentLogger } from '../../domain/index.ts';
import type { RequestRouting } from '../api/apiServer.ts';
import { type ApiContext, apiHandlers } from '../api/apiHandlers.ts';
import type { Principal } from '../api/auth.ts';
import { replyBudgetFor } from '../api/apiServer.ts';
import { Inflight, answerRequest, parseParams } from '../api/requestReply.ts';
import { type ThreadWatches, WORKER_PRINCIPAL_PREFIX } from '../api/threadWatches.ts';
import { type Command, type CommandResult, systemCommandId } from '../engine/commands.ts';
import { leaseKeyHash } from '../engine/decide.ts';
import { isHandOverState } from '../engine/settleTurn.ts';
import type { Engine } from '../engine/engine.ts';
import {
  type Claim,
  type Hello,
  type HelloAnswer,
  type LeaseProof,
  type Offer,
  type RecordRequest,
  type RevertAnswer,
  type RevertTask,
  type SideWorkRequest,
  claimSchema,
  helloSchema,
  leasedReadSchemas,
  recordSchema,
  checkSchema,
  revertAnswerSchema,
  settleSchema,
  sideWorkSchema,
} from './workerProtocol.ts';
import { WorkerRegistry } from './workerRegistry.ts';
import type { WorkerInfo } from '../../protocol/apiResults.ts';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TRACEPARENT_HEADER, contextOf } from '../../protocol/traceContext.ts';
import { VERSION } from '../../domain/version.ts';

const tracer = trace.getTracer('turnloom', VERSION);

export const WORKER_QUEUE_GROUP = 'turnloom-engine';

export interface WorkerGatewayOptions {
  /** A lease not renewed this long is lost, and its turn resumes on another worker (default 10 s). */
  leaseTimeoutMs?: number;
  /** How often workers are asked to say they are alive (default 2 s). */
  heartbeatMs?: number;
  /** How many times a turn may be resumed after losing its worker before it fails (default 2). */
  maxResumes?: number;
  maxPayloadBytes: number;
  now?: () => number;
  /**
   * Back-pressure: at most this many turns run (hold a lease) at once
   * (default 500); past it the others stay requested, in their queue, not
   * offered, and a claim is refused with `overloaded`, so running turns keep
   * their latency. When more than `maxWaitingTurns` wait for a slot (default
   * 5,000), `turn.start` is refused with `overloaded` and writes nothing.
   */
  maxRunningTurns?: number;
  maxWaitingTurns?: number;
  /** Whether a worker's process is known to be gone (default: never known, so every lease waits for its timeout). */
  processGone?: (process: WorkerProcess) => boolean;
  /** Where answers to workers may go (default: any inbox); the server keeps them out of the inbox spaces bound to principals. */
  mayReplyTo?: (reply: string) => boolean;
  /**
   * In a cluster: requests go to the engine that owns their thread, this
   * engine keeps the clocks and offers of the threads it owns only, and
   * workers' hellos are told to every engine.
   */
  cluster?: { engineId: string; router: RequestRouting; owns(threadId: string): boolean };
  /** Headers every answer carries (see `AnswerOptions.headers`). */
  answerHeaders?: Readonly<Record<string, string>>;
  log?: Logger;
}

/** A worker's hello as one engine of a cluster tells the others. */
interface HelloCast {
  from: string;
  environment: string;
  hello: Hello;
}

interface HeldLease {
  threadId: string;
  turnId: string;
  workerId: string;
  token: number;
  expiresAt: number;
  /** When the lease was granted (the engine's clock): a heartbeat that leaves it out this long after does not run it. */
  since: number;
}

const leaseKey = (threadId: string, turnId: string) => `${threadId}/${turnId}`;

export const DEFAULT_MAX_RUNNING_TURNS = 500;
export const DEFAULT_MAX_WAITING_TURNS = 5_000;
/**
 * How long after a lease was granted a heartbeat that leaves it out says the
 * worker does not run it: more than a claim's answer takes, clocks' skew,
 * and the longest a worker's heartbeat may be on its way (its 4-s wait).
 */
const UNRUN_AFTER_MS = 5_000;
/** What an `overloaded` answer suggests waiting: about the time a slot takes to free at the default limits. */
const OVERLOADED_RETRY_MS = 1_000;

/**
 * A worker's write under its lease as the engine's command: numbered when
 * it is written (a retry of the same write is answered from the lease's
 * receipt, never written twice), unnumbered when it is only checked.
 */
function recordCommand(proof: LeaseProof, events: RecordRequest['events'], seq?: number): Command {
  const { threadId, turnId, token, key } = proof;
  return {
    type: 'turn.record',
    commandId: seq === undefined ? systemCommandId('check', threadId, turnId, token) : systemCommandId('record', threadId, turnId, token, seq),
    threadId,
    turnId,
    lease: { token, key },
    ...(seq === undefined ? {} : { seq }),
    events,
  };
}

/**
 * The engine's side of the worker protocol, on `<p>.v1.worker.<environment>.<method>`:
 * workers say hello (and so renew their leases), claim turns offered on
 * `<p>.v1.work.offer.<environment>`, write what they produce under their
 * lease, read the threads they hold, and report side work (a title, a
 * summary) for the turns they ran. It keeps the leases' clocks outside
 * the machines: a lease not renewed in time is expired through the engine,
 * which closes the lost worker's step, and the turn is offered again.
 */
export class WorkerGateway {
  private readonly registry: WorkerRegistry;
  private readonly leases = new Map<string, HeldLease>();
  private readonly reverts = new Map<string, Promise<RevertAnswer>>();
  private readonly inflight: Inflight;
  private readonly log: Logger;
  private readonly options: Required<Omit<WorkerGatewayOptions, 'cluster' | 'log' | 'answerHeaders'>>;
  private readonly answerHeaders: Readonly<Record<string, string>>;
  /** The queue group's subscriptions, apart: `pauseIntake` leaves them for the others of the group. */
  private intake: BusSubscription[] = [];
  private readonly cluster: WorkerGatewayOptions['cluster'];
  private readonly subscriptions: BusSubscription[] = [];
  private unsubscribe: (() => void) | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private scan: Promise<void> | undefined;
  private ticking = false;
  /** The workers heard from within the lease timeout at the last tick. */
  private live = new Set<string>();
  /** Open turns of this engine's threads that no worker holds: what waits for a slot. */
  private readonly waiting = new Map<string, { threadId: string; turnId: string }>();
  /** Claims being decided: slots promised but not yet leases. */
  private claiming = 0;
  /** A turn was left unoffered for want of a slot: a slot that frees offers again at once. */
  private withheld = false;
  private reoffer: Promise<void> | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly subjects: Subjects,
    private readonly engine: Engine,
    private readonly watches: ThreadWatches,
    options: WorkerGatewayOptions,
  ) {
    const leaseTimeoutMs = options.leaseTimeoutMs ?? 10_000;
    // Several heartbeats fit in a lease, so one lost message does not lose it.
    const { cluster, log, answerHeaders, ...rest } = options;
    this.log = log ?? silentLogger;
    this.answerHeaders = answerHeaders ?? {};
    this.inflight = new Inflight('workers', this.log);
    this.cluster = cluster;
    this.options = {
      leaseTimeoutMs,
      heartbeatMs: Math.min(2_000, Math.floor(leaseTimeoutMs / 4)),
      maxResumes: 2,
      maxRunningTurns: DEFAULT_MAX_RUNNING_TURNS,
      maxWaitingTurns: DEFAULT_MAX_WAITING_TURNS,
      now: Date.now,
      processGone: () => false,
      mayReplyTo: isInbox,
      ...rest,
    };
    this.registry = new WorkerRegistry(this.options.leaseTimeoutMs);
  }

  /**
   * Starts serving workers. Leases found open get a full timeout to be
   * renewed (their workers may have outlived a restart), except those of a
   * worker whose process is known to be gone (it ran on this host, in the
   * process that held the data folder before, say): they expire at once, so
   * their turns resume now rather than a lease timeout later.
   */
  async start(): Promise<this> {
    this.unsubscribe = this.engine.onCommitted((events) => this.react(events));
    const gone: HeldLease[] = [];
    this.scan = this.engine
      .forEachOpenTurn((threadId, turn) => {
        const held = this.followLease(threadId, turn);
        if (held) gone.push(held);
      })
      .then(() => this.expire(gone, (lease) => `the process of worker ${lease.workerId} is gone`))
      .catch((error: unknown) => this.log.error(errorFields(error), 'workers: could not read the open turns'));
    this.resumeIntake();
    if (this.cluster) this.subscriptions.push(this.bus.subscribe(this.subjects.engineCast('hello'), (message) => this.heardElsewhere(message)));
    this.ticker = setInterval(() => this.tick(), Math.min(1_000, this.options.heartbeatMs));
    this.ticker.unref();
    return this;
  }

  /**
   * Starts the clock of an open turn's lease read from the store (a commit
   * that already told us about the lease is newer than the row), unless this
   * engine does not own the thread. Returns the lease when its worker's
   * process is known to be gone, to expire at once.
   */
  private followLease(threadId: string, turn: TurnView): HeldLease | undefined {
    const lease = turn.lease;
    if (!this.owns(threadId)) return undefined;
    if (!lease) {
      if (isHandOverState(turn)) this.waiting.set(leaseKey(threadId, turn.id), { threadId, turnId: turn.id });
      return undefined;
    }
    if (this.leases.has(leaseKey(threadId, turn.id))) return undefined;
    const held = { threadId, turnId: turn.id, workerId: lease.workerId, token: lease.token, expiresAt: this.options.now() + this.options.leaseTimeoutMs, since: lease.since };
    this.leases.set(leaseKey(threadId, turn.id), held);
    return lease.process && this.options.processGone(lease.process) ? held : undefined;
  }

  /** Stops taking worker requests from the queue group, so the bus hands them to the other engines (see `ApiServer.pauseIntake`). */
  pauseIntake(): void {
    for (const subscription of this.intake.splice(0)) subscription.unsubscribe();
  }

  /** Takes worker requests from the queue group again (and on `start`). */
  resumeIntake(): void {
    if (this.intake.length > 0) return;
    const router = this.cluster?.router;
    const receive = (message: BusMessage) => this.inflight.track(router ? router.route(message, (routed) => this.handle(routed)) : this.handle(message));
    this.intake = this.subjects.workerAll.map((subject) => this.bus.subscribe(subject, receive, { queue: WORKER_QUEUE_GROUP }));
  }

  private owns(threadId: string): boolean {
    return this.cluster?.owns(threadId) ?? true;
  }

  /**
   * Takes up a thread this engine of a cluster just took from another: the
   * clock of its open turn's lease (a full timeout, as on start, unless the
   * worker's process is known to be gone), its offer if it waits for a
   * worker, and what nobody would otherwise confirm.
   */
  async adopt(threadId: string): Promise<void> {
    const view = await this.engine.getThread(threadId);
    const turn = view.openTurnId ? view.turns[view.openTurnId] : undefined;
    if (turn) {
      const gone = this.followLease(threadId, turn);
      if (gone) await this.expire([gone], (lease) => `the process of worker ${lease.workerId} is gone`);
      else if (!turn.lease && turn.state.startsWith('interrupting')) this.settleUnheld(threadId, turn.id);
      else this.offer(threadId, turn.id);
    }
    this.confirmStopWhenFree(threadId);
  }

  /** Lets go of the clocks of a thread this engine no longer owns. */
  forget(threadId: string): void {
    for (const [key, lease] of this.leases) if (lease.threadId === threadId) this.leases.delete(key);
    for (const [key, turn] of this.waiting) if (turn.threadId === threadId) this.waiting.delete(key);
  }

  /** Turns running (leased) and waiting for a slot on this engine's threads. */
  load(): { running: number; waiting: number; maxRunning: number; maxWaiting: number } {
    return { running: this.leases.size, waiting: this.waiting.size, maxRunning: this.options.maxRunningTurns, maxWaiting: this.options.maxWaitingTurns };
  }

  admitTurn(): void {
    if (this.waiting.size < this.options.maxWaitingTurns) return;
    throw new TurnloomError('overloaded', `the engine runs ${this.leases.size} turns and ${this.waiting.size} more wait for a slot; try again later`, {
      running: this.leases.size,
      waiting: this.waiting.size,
      retryAfterMs: OVERLOADED_RETRY_MS,
    });
  }

  /** Slots free for new leases: past the limit a turn waits, so those running keep their latency. */
  private freeSlots(): number {
    return this.options.maxRunningTurns - this.leases.size - this.claiming;
  }

  workers(): WorkerInfo[] {
    return this.registry.list(this.options.now());
  }

  liveWorkers(environment: string): number {
    return this.registry.liveIn(environment, this.options.now());
  }

  /**
   * Has one worker of the environment undo what a revert's turns changed;
   * answers what that changed and where the tree before it was saved. One
   * run per revert: a client retrying while it runs waits for the same one.
   */
  /** Whether this engine is running that revert now. */
  reverting(revertId: string): boolean {
    return this.reverts.has(revertId);
  }

  revert(environment: string, task: Omit<RevertTask, 'task'>, timeoutMs = 120_000): Promise<RevertAnswer> {
    const running = this.reverts.get(task.revertId);
    if (running) return running;
    const run = this.askRevert(environment, task, timeoutMs).finally(() => this.reverts.delete(task.revertId));
    this.reverts.set(task.revertId, run);
    return run;
  }

  private async askRevert(environment: string, task: Omit<RevertTask, 'task'>, timeoutMs: number): Promise<RevertAnswer> {
    let reply: BusMessage;
    try {
      reply = await this.bus.request(this.subjects.workspaceTasks(environment), encode({ task: 'revert', ...task } satisfies RevertTask, JSON_TYPE), {
        headers: { 'content-type': JSON_TYPE },
        timeoutMs,
      });
    } catch (error) {
      if (!(error instanceof BusError) || !['no_responders', 'timeout'].includes(error.kind)) throw error;
      throw new TurnloomError(
        'unavailable',
        error.kind === 'timeout'
          ? `the worker reverting files of environment "${environment}" did not answer in ${timeoutMs} ms; its files may be partly put back`
          : `no worker of environment "${environment}" with checkpoints is up to revert its files`,
        { environment },
      );
    }
    const answer = decode(reply.data, contentTypeOf(reply.headers, reply.data)) as { result: unknown } | { error: ErrorBody };
    if ('error' in answer) throw TurnloomError.fromJSON(answer.error);
    const parsed = revertAnswerSchema.safeParse(answer.result);
    if (!parsed.success) throw new TurnloomError('unavailable', `the worker's answer to a revert could not be read: ${parsed.error.message}`, { environment });
    return parsed.data;
  }

  /** Serves one worker request here; `answerTo`: where the answer goes when another engine passed it on. */
  async handle(message: BusMessage, answerTo?: string): Promise<void> {
    const addressed = this.subjects.workerMethodOf(message.subject);
    // A write of a turn that runs in a trace: the engine's part of it joins the trace.
    const traced = message.headers[TRACEPARENT_HEADER];
    const span = traced && addressed ? tracer.startSpan(`turnloom.worker.${addressed.method}`, { kind: SpanKind.SERVER, attributes: { 'turnloom.worker.environment': addressed.environment } }, contextOf(traced)) : undefined;
    const code = await answerRequest(this.bus, message, { maxPayload: this.options.maxPayloadBytes, label: 'workers', mayReplyTo: this.options.mayReplyTo, answerTo, log: this.log, headers: this.answerHeaders }, (body) => {
      if (!addressed) throw new TurnloomError('not_found', `${message.subject} is not <prefix>.v1.worker.<environment>.<method>`, { subject: message.subject });
      return this.dispatch(addressed.environment, addressed.method, body, message.reply!);
    });
    if (code) span?.setStatus({ code: SpanStatusCode.ERROR, message: code });
    span?.end();
  }

  /**
   * One worker message, sent on the subjects of `environment`: the only
   * environment its sender is known to have (NATS permissions grant a worker
   * user its own). Whatever the body names beyond it, another environment or
   * a thread of one, is refused.
   */
  private async dispatch(environment: string, method: string, body: unknown, replyTo: string): Promise<unknown> {
    switch (method) {
      case 'hello':
        return this.hello(environment, parseParams(helloSchema, body, method));
      case 'claim':
        return this.claim(environment, parseParams(claimSchema, body, method));
      case 'record': {
        const { seq, events, ...proof } = parseParams(recordSchema, body, method);
        this.threadIn(environment, proof.threadId);
        const result = await this.engine.submit(recordCommand(proof, events, seq));
        this.renew(proof);
        return result;
      }
      case 'check': {
        const { events, ...proof } = parseParams(checkSchema, body, method);
        this.threadIn(environment, proof.threadId);
        return this.engine.check(recordCommand(proof, events));
      }
      case 'settle': {
        const { outcome, ...proof } = parseParams(settleSchema, body, method);
        this.threadIn(environment, proof.threadId);
        return this.engine.submit({
          type: 'turn.settle',
          commandId: systemCommandId('settle', proof.threadId, proof.turnId, proof.token),
          threadId: proof.threadId,
          turnId: proof.turnId,
          lease: { token: proof.token, key: proof.key },
          outcome,
        });
      }
      case 'sideWork':
        return this.sideWork(environment, parseParams(sideWorkSchema, body, method));
      default:
        return this.read(environment, method, body, replyTo);
    }
  }

  /** The thread, when it runs in `environment`; a thread of another one answers like one that does not exist. */
  private threadIn(environment: string, threadId: string): void {
    if (this.engine.summary(threadId)?.environment !== environment) throw new TurnloomError('not_found', `thread ${threadId} not found in environment "${environment}"`, { threadId, environment });
  }

  private hello(environment: string, hello: Hello): HelloAnswer {
    if (hello.environment !== environment) {
      throw new TurnloomError('forbidden', `a hello on the subjects of environment "${environment}" cannot speak for environment "${hello.environment}"`, { environment });
    }
    const now = this.options.now();
    const known = this.registry.get(hello.workerId, now);
    // Ids are the workers' own choice: one of another environment's, while that worker lives, is not taken over.
    if (known?.live && known.environment !== environment) {
      throw new TurnloomError('conflict', `worker ${hello.workerId} is live in another environment; choose another id`, { workerId: hello.workerId });
    }
    const arrived = this.registry.heard(hello, now);
    if (arrived) this.log.info({ workerId: hello.workerId, environment, host: hello.host, pid: hello.pid, capacity: hello.capacity }, 'worker joined');
    const leases = hello.running.map(({ threadId, turnId, token }) => ({ threadId, turnId, token, held: this.renewHeld(environment, hello.workerId, threadId, turnId, token, now) }));
    this.expireUnrun(hello, now);
    if (this.cluster) this.bus.publish(this.subjects.engineCast('hello'), encode({ from: this.cluster.engineId, environment, hello } satisfies HelloCast, JSON_TYPE));
    // A worker that just came (or came back) hears at once what waits in its environment.
    if (arrived) this.offerWaiting(hello.environment).catch((error: unknown) => this.log.error(errorFields(error), 'workers: could not offer waiting turns'));
    return { heartbeatMs: this.options.heartbeatMs, leaseTimeoutMs: this.options.leaseTimeoutMs, leases };
  }

  /**
   * Whether the worker still holds a lease it names in its hello; renews the
   * lease's clock when this engine keeps it. In a cluster the thread may be
   * another engine's: this engine's copy of it answers, and a copy that
   * lags behind the lease (it has not reached the thread or its
   * `turn.leased` yet) never says a lease is lost.
   */
  private renewHeld(environment: string, workerId: string, threadId: string, turnId: string, token: number, now: number): boolean {
    const held = this.leases.get(leaseKey(threadId, turnId));
    const clocked = held !== undefined && held.token === token && held.workerId === workerId && this.engine.summary(threadId)?.environment === environment;
    if (clocked) held.expiresAt = now + this.options.leaseTimeoutMs;
    if (!this.cluster || this.owns(threadId)) return clocked;
    const summary = this.engine.summary(threadId);
    // A copy that has not reached the thread, or its lease, cannot say it is lost; the owner fences every write anyway.
    if (!summary || summary.seq < token) return true;
    if (summary.environment !== environment) return false;
    const lease = this.engine.readTurn(threadId, turnId)?.lease;
    return lease?.token === token && lease.workerId === workerId;
  }

  /**
   * Expires at once the leases this engine keeps for the worker that its
   * heartbeat does not name, well after they were granted: the answer to
   * its claim never reached it (the engine that granted it was cut off or
   * died as it answered), so it does not run the turn, and waiting for the
   * lease's timeout would only hold the turn up. Its writes under such a
   * lease would be fenced anyway.
   */
  private expireUnrun(hello: Hello, now: number): void {
    const named = new Set(hello.running.map(({ threadId, turnId }) => leaseKey(threadId, turnId)));
    const unrun = [...this.leases].filter(([key, lease]) => lease.workerId === hello.workerId && !named.has(key) && now - lease.since > UNRUN_AFTER_MS).map(([, lease]) => lease);
    if (unrun.length === 0) return;
    this.expire(unrun, (lease) => `worker ${lease.workerId} does not run it (its heartbeat does not name it): the answer to its claim was lost`).catch((error: unknown) => this.log.error(errorFields(error), 'workers: could not expire a lease'));
  }

  /** A worker's hello another engine of the cluster served: this one hears the worker, and renews the leases it keeps for it. */
  private heardElsewhere(message: BusMessage): void {
    let cast: HelloCast;
    try {
      cast = decode(message.data, JSON_TYPE) as HelloCast;
      if (cast.from === this.cluster?.engineId) return;
      cast = { ...cast, hello: helloSchema.parse(cast.hello) };
    } catch {
      return;
    }
    const now = this.options.now();
    if (cast.hello.environment !== cast.environment) return;
    const arrived = this.registry.heard(cast.hello, now);
    for (const { threadId, turnId, token } of cast.hello.running) this.renewHeld(cast.environment, cast.hello.workerId, threadId, turnId, token, now);
    this.expireUnrun(cast.hello, now);
    if (arrived) this.offerWaiting(cast.environment).catch((error: unknown) => this.log.error(errorFields(error), 'workers: could not offer waiting turns'));
  }

  private liveWorker(workerId: string, doing: string): WorkerInfo {
    const worker = this.registry.get(workerId, this.options.now());
    if (!worker?.live) throw new TurnloomError('conflict', `worker ${workerId} has not said hello (or not lately); say hello before ${doing}`, { workerId });
    return worker;
  }

  private async claim(environment: string, claim: Claim): Promise<{ token: number }> {
    const worker = this.liveWorker(claim.workerId, 'claiming');
    if (worker.environment !== environment) throw new TurnloomError('forbidden', `worker ${claim.workerId} serves another environment than "${environment}"`, { workerId: claim.workerId });
    this.threadIn(environment, claim.threadId);
    if (this.freeSlots() <= 0) {
      this.withheld = true;
      throw new TurnloomError('overloaded', `the engine runs ${this.leases.size} turns, its limit; turn ${claim.turnId} waits for a slot and is offered again then`, {
        running: this.leases.size,
        retryAfterMs: OVERLOADED_RETRY_MS,
      });
    }
    this.claiming += 1;
    try {
      const result = await this.engine.submit({
        type: 'turn.lease',
        commandId: systemCommandId('lease', claim.threadId, claim.turnId, claim.claimId),
        threadId: claim.threadId,
        turnId: claim.turnId,
        workerId: claim.workerId,
        keyHash: claim.keyHash,
        process: { host: worker.host, pid: worker.pid, startTicks: worker.startTicks },
      });
      return { token: result.toThreadSeq };
    } finally {
      this.claiming -= 1;
    }
  }

  /** A live worker's side work for a turn it ran, shown by the lease it ran it under: the engine records it and applies it if it still may. */
  private async sideWork(environment: string, { workerId, threadId, turnId, token, key, ...report }: SideWorkRequest): Promise<CommandResult> {
    this.liveWorker(workerId, 'reporting side work');
    this.threadIn(environment, threadId);
    const leased = this.engine.readEvents(threadId, token - 1, 1)[0]?.event;
    if (leased?.type !== 'turn.leased' || leased.turnId !== turnId || leased.workerId !== workerId || leased.keyHash !== leaseKeyHash(key)) {
      throw new TurnloomError('fenced', `worker ${workerId} never held turn ${turnId} under lease ${token}; its side work is not taken`, { turnId, token });
    }
    return this.engine.submit({
      type: 'sideWork.record',
      // One report per turn and kind: a retry is answered from its receipt.
      commandId: systemCommandId('side', threadId, turnId, report.kind),
      threadId,
      workerId,
      report: { turnId, ...report },
    });
  }

  /** The thread reads the API offers, for the holder of a lease on one of the thread's turns. */
  private async read(environment: string, method: string, body: unknown, replyTo: string): Promise<unknown> {
    if (!Object.hasOwn(leasedReadSchemas, method)) throw new TurnloomError('not_found', `unknown worker method "${method}"`, { method });
    const name = method as keyof typeof leasedReadSchemas;
    const { workerId, threadId, turnId, token, key, ...params } = parseParams(leasedReadSchemas[name], body, method);
    this.threadIn(environment, threadId);
    // Dropping one's own watch needs no lease (the turn may have ended); everything else reads under it.
    const lease = (await this.engine.getThread(threadId)).turns[turnId]?.lease;
    if (name !== 'thread.unwatch' && (lease?.token !== token || lease.keyHash !== leaseKeyHash(key))) {
      throw new TurnloomError('fenced', `worker ${workerId} does not hold turn ${turnId}`, { turnId, token });
    }
    const principal: Principal = { name: `${WORKER_PRINCIPAL_PREFIX}${workerId}`, scopes: new Set(['read', 'admin']), inboxPrefix: null };
    const context: ApiContext = {
      engine: this.engine,
      principal,
      replyTo,
      watches: this.watches,
      workers: this,
      defaultProvider: { name: 'scripted', model: null },
      agentProviders: {},
      providers: null,
      replyBudgetBytes: replyBudgetFor(this.options.maxPayloadBytes),
      service: { name: 'turnloom', version: '', instance: '', startedAt: 0 },
    };
    return (apiHandlers[name].handle as (context: ApiContext, params: unknown) => Promise<unknown>)(context, { threadId, ...params });
  }

  private renew(proof: LeaseProof): void {
    const held = this.leases.get(leaseKey(proof.threadId, proof.turnId));
    if (held && held.token === proof.token) held.expiresAt = this.options.now() + this.options.leaseTimeoutMs;
  }

  private react(events: readonly StoredEvent[]): void {
    const freed = this.leases.size;
    for (const { threadId, event } of events) {
      // A commit that ended as this engine of a cluster lost the thread: its new owner keeps the clocks.
      if (!this.owns(threadId)) continue;
      switch (event.type) {
        case 'turn.requested':
          this.waiting.set(leaseKey(threadId, event.turnId), { threadId, turnId: event.turnId });
          this.offer(threadId, event.turnId);
          break;
        case 'turn.leased':
          this.waiting.delete(leaseKey(threadId, event.turnId));
          this.leases.set(leaseKey(threadId, event.turnId), {
            threadId,
            turnId: event.turnId,
            workerId: event.workerId,
            token: event.token,
            expiresAt: this.options.now() + this.options.leaseTimeoutMs,
            since: this.options.now(),
          });
          break;
        case 'turn.leaseLost':
          this.leases.delete(leaseKey(threadId, event.turnId));
          this.waiting.set(leaseKey(threadId, event.turnId), { threadId, turnId: event.turnId });
          this.offer(threadId, event.turnId);
          break;
        case 'turn.interruptRequested':
          // Nobody runs it, so nobody else will confirm the stop.
          if (!this.leases.has(leaseKey(threadId, event.turnId))) this.settleUnheld(threadId, event.turnId);
          break;
        case 'turn.completed':
        case 'turn.failed':
        case 'turn.interrupted':
          this.leases.delete(leaseKey(threadId, event.turnId));
          this.waiting.delete(leaseKey(threadId, event.turnId));
          this.confirmStopWhenFree(threadId);
          break;
        case 'session.stopRequested':
          this.confirmStopWhenFree(threadId);
          break;
        default:
          break;
      }
    }
    if (this.leases.size < freed) this.offerFreedSlots();
  }

  /** A slot freed while turns were left waiting for one: they are offered now, not at the next tick. */
  private offerFreedSlots(): void {
    if (!this.withheld || this.reoffer || this.waiting.size === 0) return;
    this.withheld = false;
    this.reoffer = this.offerWaiting(null)
      .catch((error: unknown) => this.log.error(errorFields(error), 'workers: could not offer waiting turns'))
      .finally(() => {
        this.reoffer = undefined;
      });
  }

  /** Tells the workers of the thread's environment that the turn waits (if it does). */
  private offer(threadId: string, turnId: string): void {
    void this.offerIfWaiting(threadId, turnId).catch((error: unknown) => this.log.error({ ...errorFields(error), threadId, turnId }, 'workers: could not offer a turn'));
  }

  private async offerIfWaiting(threadId: string, turnId: string): Promise<boolean> {
    // The thread's summary and the one turn's row: a waiting thread with a long history is not read whole.
    const summary = this.engine.summary(threadId);
    const turn = this.engine.readTurn(threadId, turnId);
    if (!summary || summary.openTurnId !== turnId || !turn || turn.lease || !isHandOverState(turn)) return false;
    if (this.freeSlots() <= 0) {
      this.withheld = true;
      return false;
    }
    const offer: Offer = { threadId, turnId };
    this.bus.publish(this.subjects.offers(summary.environment), encode(offer, JSON_TYPE), { headers: { 'content-type': JSON_TYPE } });
    return true;
  }

  /** Offers again what waits, where a worker is alive to take it (of one environment, or of all). */
  private async offerWaiting(environment: string | null): Promise<void> {
    const now = this.options.now();
    // Each offer may become a lease: no more are made than there are slots, the rest wait for the next round.
    let slots = this.freeSlots();
    for (const { threadId, turnId } of this.waiting.size > 0 ? [...this.waiting.values()] : []) {
      if (slots <= 0) {
        this.withheld = true;
        return;
      }
      if (!this.owns(threadId)) continue;
      const waitsIn = this.engine.summary(threadId)?.environment;
      if (waitsIn === undefined || (environment !== null && waitsIn !== environment) || this.registry.liveIn(waitsIn, now) === 0) continue;
      const offered = await this.offerIfWaiting(threadId, turnId).catch((error: unknown) => {
        this.log.error({ ...errorFields(error), threadId, turnId }, 'workers: could not offer a turn');
        return false;
      });
      if (offered) slots -= 1;
    }
  }

  private settleUnheld(threadId: string, turnId: string): void {
    this.engine
      .submit({ type: 'turn.settle', commandId: systemCommandId('unheld', threadId, turnId), threadId, turnId, outcome: { kind: 'interrupted', cause: 'engine', reason: 'interrupted before a worker took it' } })
      .catch(this.ignoreSettled);
  }

  /** Provider sessions live only as long as a call here, so a stop is confirmed as soon as no turn holds the session. */
  private confirmStopWhenFree(threadId: string): void {
    void (async () => {
      const view = await this.engine.getThread(threadId);
      if (view.session.state !== 'stopping' || view.openTurnId) return;
      await this.engine.submit({ type: 'session.confirmStopped', commandId: systemCommandId('stopped', threadId, view.seq), threadId });
    })().catch(this.ignoreSettled);
  }

  /** Says so when a worker it heard from went silent past the lease timeout. */
  private noticeLost(): void {
    const live = new Set<string>();
    for (const worker of this.registry.list(this.options.now())) {
      if (worker.live) live.add(worker.workerId);
      else if (this.live.has(worker.workerId)) this.log.warn({ workerId: worker.workerId, environment: worker.environment, silentMs: this.options.now() - worker.lastHeartbeat }, 'worker lost');
    }
    this.live = live;
  }

  /** Expires leases nobody renewed, and offers again what waits where a worker is alive (an offer may be lost). */
  private tick(): void {
    if (this.ticking) return;
    this.noticeLost();
    this.ticking = true;
    void this.expireLapsed()
      .then(() => this.offerWaiting(null))
      .catch((error: unknown) => this.log.error(errorFields(error), 'workers: could not offer waiting turns'))
      .finally(() => {
        this.ticking = false;
      });
  }

  private async expireLapsed(): Promise<void> {
    const now = this.options.now();
    await this.expire(
      [...this.leases.values()].filter((lease) => lease.expiresAt <= now),
      (lease) => `no heartbeat from worker ${lease.workerId} for ${this.options.leaseTimeoutMs} ms`,
    );
  }

  private async expire(leases: readonly HeldLease[], why: (lease: HeldLease) => string): Promise<void> {
    for (const lease of leases) {
      await this.engine
        .submit({
          type: 'turn.expireLease',
          commandId: systemCommandId('expire', lease.threadId, lease.turnId, lease.token),
          threadId: lease.threadId,
          turnId: lease.turnId,
          token: lease.token,
          reason: why(lease),
          maxResumes: this.options.maxResumes,
        })
        .then(
          () => true,
          (error: unknown) => {
            this.ignoreSettled(error);
            // Not now (the log did not take it): the clock stays, and the next tick tries again.
            return !(error instanceof TurnloomError && error.code === 'unavailable');
          },
        )
        .then((done) => {
          if (done && this.leases.get(leaseKey(lease.threadId, lease.turnId)) === lease) this.leases.delete(leaseKey(lease.threadId, lease.turnId));
        });
    }
  }

  /** Settled, answered or moved on meanwhile: exactly what a reactor waited for; anything else is logged. */
  private readonly ignoreSettled = (error: unknown): void => {
    if (error instanceof TurnloomError && ['illegal_transition', 'conflict', 'not_found', 'unavailable'].includes(error.code)) return;
    this.log.error(errorFields(error), 'workers: a command of the engine\'s own failed');
  };

  async stop(): Promise<void> {
    this.pauseIntake();
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
    this.unsubscribe?.();
    clearInterval(this.ticker);
    await this.scan;
    await this.inflight.settled();
  }
}

