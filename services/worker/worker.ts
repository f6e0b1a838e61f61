import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { startTicksOf } from '../../adapters/processIdentity.ts';
import { type FunctionTool, FunctionTools, combineTools, isFunctionTool } from '../../adapters/tools/index.ts';
import { JSON_TYPE, type Subjects, decode, subjects as subjectsFor } from '../../bus/index.ts';
import { ThreadWatch, type ThreadWatchContext } from '../../protocol/threadWatch.ts';
import { type AgentProfile, builtinAgents, type Bus, type ThreadView, type BusError, DEFAULT_AGENT, type BusSubscription, DEFAULT_ENVIRONMENT, type Logger, type ProviderAdapter, errorFields, silentLogger, type ProviderChoice, type ToolExecutor, TurnloomError, type WorkspaceCheckpoints } from '../../domain/index.ts';
import { snapshotContext } from './turnContext.ts';
import { type HelloAnswer, type RevertAnswer, revertTaskSchema } from '../dispatch/workerProtocol.ts';
import { DEFAULT_MAX_PAYLOAD } from '../api/apiServer.ts';
import { Inflight, answerRequest, parseParams } from '../api/requestReply.ts';
import { defaultRetryPolicy } from '../runtime/retryPolicy.ts';
import { LeasedThread } from './leasedThread.ts';
import { LiveBatcher } from './liveBatcher.ts';
import { undoToRecord } from './recordedChanges.ts';
import { SideWork, type SideWorkOptions } from './sideWork.ts';
import { unboundedController } from './unboundedController.ts';
import { Outbox, type OutboxBounds } from './outbox.ts';
import { compactionHooks } from './compaction.ts';
import { type CheckpointSetting, type StopReason, type TurnLoopOptions, runTurn } from './turnLoop.ts';
import { type TurnHooks, combineHooks } from './turnHooks.ts';
import { WorkerLink, isTransient } from './workerLink.ts';
import { TurnTracing } from './turnTracing.ts';

export interface WorkerOptions {
  bus: Bus;
  prefix?: string;
  workerId?: string;
  /** The environment it serves (default `default`): it takes the turns of threads that name it. */
  environment?: string;
  /** Which offered turns it takes, by their thread (default: every one of its environment): a one-shot run takes only its own thread's. */
  takes?: (threadId: string) => boolean;
  /** The folder it works in, shown by `worker.list`. */
  workspace?: string | null;
  /**
   * The tools it runs for the model's calls: its workspace's executor, or a
   * list of executors (the workspace's, MCP servers') and tools of the
   * program's own (`tool()`), whose names must not clash (a `TypeError`
   * here). None: every call fails, saying there is no workspace.
   */
  tools?: ToolExecutor | ReadonlyArray<ToolExecutor | FunctionTool>;
  /** Its workspace's checkpoints (before and after each turn that changes it), or why it keeps none. */
  checkpoints?: CheckpointSetting;
  /** The adapter for a turn's provider choice; `undefined` fails the turn with a clear error. */
  adapterFor: (choice: ProviderChoice) => ProviderAdapter | undefined;
  /** Turns it runs at once (default 64: a turn mostly waits on its provider). */
  concurrency?: number;
  loop?: Partial<Omit<TurnLoopOptions, 'retry' | 'compaction'>> & { retry?: Partial<TurnLoopOptions['retry']>; compaction?: Partial<TurnLoopOptions['compaction']> };
  /** Extension hooks run in every turn's step loop, after the built-in compaction (see `turnHooks.ts`). */
  hooks?: TurnHooks;
  /** How much may pile up while the engine is away before a turn gives up (default 10,000 events, 16 MiB). */
  outbox?: Partial<OutboxBounds>;
  /** How long to keep trying to deliver a turn's last writes when stopping with the engine away (default 5 s). */
  stopGraceMs?: number;
  /** Side work after the turns it runs (a title, summaries; see `sideWork.ts`): its model calls' timeout (default 30 s), or `false` for none. */
  sideWork?: Partial<SideWorkOptions> | false;
  /** Where it says what it did (claims, turns, failures); default: nowhere. */
  log?: Logger;
  /** Agent profiles besides the built-in `build` and `plan` (a profile of the same name replaces the built-in one). */
  agents?: Record<string, AgentProfile>;
  /** The user's own instructions file, given to every turn after the project's AGENTS.md; default none. */
  userInstructions?: string | null;
  /** The agent of turns whose thread names none (default `build`). */
  defaultAgent?: string;
}

interface Run {
  threadId: string;
  turnId: string;
  token: number | null;
  controller: AbortController;
  done: Promise<void>;
}

const offerSchema = z.object({ threadId: z.string().min(1).max(128), turnId: z.string().min(1).max(128) }).strict();
const ownStartTicks = startTicksOf(process.pid);
const runKey = (threadId: string, turnId: string) => `${threadId}/${turnId}`;
/** How many threads' folds a worker keeps for their next turn (see `Worker.keepFold`). */
const KEPT_FOLDS = 8;

/**
 * A worker: it reaches the engine only through the bus. It says hello on a
 * heartbeat (which renews its leases), takes the turns offered to its
 * environment while it has room, keeps its own fold of each thread it holds
 * and derives every model call from it, and writes what it produces under
 * the turn's lease. Interrupts, approval decisions and a lost lease reach it
 * as events in that fold. It holds no state between steps that the log
 * does not: another worker can take a turn over from the log alone.
 */
export class Worker {
  readonly workerId: string;
  readonly environment: string;
  private readonly bus: Bus;
  private readonly subjects: Subjects;
  private readonly link: WorkerLink;
  private readonly runs = new Map<string, Run>();
  private readonly folds = new Map<string, ThreadView>();
  /** Every turn's outbox listens to it while it waits to retry a write: one listener per running turn. */
  private readonly closing = unboundedController();
  private readonly loop: TurnLoopOptions;
  private readonly hooks: TurnHooks;
  private readonly agents: Readonly<Record<string, AgentProfile>>;
  private readonly bounds: OutboxBounds;
  private heartbeatMs = 2_000;
  private heartbeat: NodeJS.Timeout | undefined;
  private offers: BusSubscription | undefined;
  private tasks: BusSubscription | undefined;
  private readonly taskWork: Inflight;
  private readonly log: Logger;
  private readonly sideWork: SideWork | null;
  /** The executors it was given, as one, and its own tools, bound to each turn it runs. */
  private readonly executor: ToolExecutor | undefined;
  private readonly functionTools: FunctionTools;
  private stopping = false;
  /** Whether the last hello was answered (a line is logged when that changes). */
  private heard = false;
  private unlistenErrors: (() => void) | undefined;
  /** The subjects it was refused, each said once: a refusal repeats with every heartbeat. */
  private readonly refused = new Set<string>();

  constructor(private readonly options: WorkerOptions) {
    this.bus = options.bus;
    this.subjects = subjectsFor(options.prefix);
    this.workerId = options.workerId ?? `w-${randomUUID().slice(0, 8)}`;
    this.environment = options.environment ?? DEFAULT_ENVIRONMENT;
    this.link = new WorkerLink(this.bus, this.subjects, this.environment);
    this.log = options.log ?? silentLogger;
    this.taskWork = new Inflight('worker tasks', this.log);
    const { retry, compaction, ...loop } = options.loop ?? {};
    this.loop = {
      idleTimeoutMs: 60_000,
      maxSteps: 50,
      maxToolOutputChars: 100_000,
      runTools: true,
      flushMs: 1_000,
      maxBufferChars: 24_000,
      random: Math.random,
      ...loop,
      retry: { ...defaultRetryPolicy, ...retry },
      compaction: { contextWindow: null, maxPerTurn: 2, keepRecentTurns: 1, ...compaction },
    };
    this.agents = { ...builtinAgents, ...options.agents };
    this.hooks = combineHooks(compactionHooks(this.loop.compaction), options.hooks);
    this.bounds = { maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, ...options.outbox };
    this.sideWork = options.sideWork === false ? null : new SideWork(this.link, options.adapterFor, { timeoutMs: 30_000, log: this.log, ...options.sideWork });
    const given = options.tools === undefined ? [] : Array.isArray(options.tools) ? (options.tools as ReadonlyArray<ToolExecutor | FunctionTool>) : [options.tools as ToolExecutor];
    const executors = given.filter((each): each is ToolExecutor => !isFunctionTool(each));
    this.executor = executors.length > 1 ? combineTools(...executors) : executors[0];
    this.functionTools = new FunctionTools(given.filter(isFunctionTool), executors);
  }

  /** What a turn's calls run on: the executors it was given, and its own tools, told which turn calls them. */
  private toolsFor(threadId: string, turnId: string): ToolExecutor | undefined {
    if (this.functionTools.size === 0) return this.executor;
    const own = this.functionTools.forTurn({ threadId, turnId, workspace: this.options.workspace ?? null });
    return this.executor ? combineTools(this.executor, own) : own;
  }

  /** Starts listening for offers and saying hello; an engine that is not there yet is waited for. */
  async start(): Promise<this> {
    this.unlistenErrors = this.bus.onError((error) => this.refusedBy(error));
    this.offers = this.bus.subscribe(this.subjects.offers(this.environment), (message) => {
      let offer: z.output<typeof offerSchema>;
      try {
        offer = offerSchema.parse(decode(message.data, JSON_TYPE));
      } catch {
        return; // not an offer this worker can read: nothing to take
      }
      this.take(offer.threadId, offer.turnId);
    });
    const checkpoints = this.options.checkpoints;
    if (checkpoints && 'store' in checkpoints) {
      // One worker of the environment answers each task: they share the workspace.
      this.tasks = this.bus.subscribe(
        this.subjects.workspaceTasks(this.environment),
        (message) => this.taskWork.track(answerRequest(this.bus, message, { maxPayload: DEFAULT_MAX_PAYLOAD, label: `worker ${this.workerId}`, log: this.log }, (body) => this.revert(checkpoints.store, body))),
        { queue: 'turnloom-workspace' },
      );
    }
    await this.bus.flush();
    await this.beat();
    return this;
  }

  /**
   * NATS refuses a subject its user may not use without a word to the
   * request that needed it (the request only times out), so a worker whose
   * user lacks a permission would wait for ever, silently: say which.
   */
  private refusedBy(error: BusError): void {
    const { environment, subjects } = this;
    const subject = String(error.details?.subject ?? '');
    const tail = subjects.tailOf(subject) ?? '';
    const ours = [`work.offer.${environment}`, `work.task.${environment}`, `worker.${environment}.`, `live.${environment}.`];
    if (error.kind !== 'permission' || this.refused.has(subject) || !ours.some((own) => tail.startsWith(own))) return;
    this.refused.add(subject);
    this.log.error(
      { workerId: this.workerId, environment, subject, error: error.message },
      'this worker cannot join its engine: its NATS user may not use a subject the worker protocol needs (see docs/nats/turnloom-permissions.conf)',
    );
  }

  /** Undoes what a revert's turns changed, unless a turn of that thread is running here (it would write over the files put back). */
  private async revert(store: WorkspaceCheckpoints, body: unknown): Promise<RevertAnswer> {
    const task = parseParams(revertTaskSchema, body, 'revert');
    const busy = [...this.runs.values()].find((run) => run.threadId === task.threadId);
    if (busy) throw new TurnloomError('conflict', `turn ${busy.turnId} of thread ${task.threadId} is running on worker ${this.workerId}`, { turnId: busy.turnId });
    return undoToRecord(store, task);
  }

  get runningTurns(): number {
    return this.runs.size;
  }

  /** One heartbeat: who this worker is and what it runs; the answer says which leases it still holds. */
  private async beat(): Promise<void> {
    clearTimeout(this.heartbeat);
    if (this.stopping) return;
    const running = [...this.runs.values()].flatMap(({ threadId, turnId, token }) => (token === null ? [] : [{ threadId, turnId, token }]));
    try {
      const answer = await this.link.call<HelloAnswer>('hello', {
        workerId: this.workerId,
        environment: this.environment,
        workspace: this.options.workspace ?? null,
        host: hostname(),
        pid: process.pid,
        startTicks: ownStartTicks,
        capacity: this.capacity,
        running,
      });
      this.heartbeatMs = answer.heartbeatMs;
      if (!this.heard) this.log.info({ workerId: this.workerId, environment: this.environment }, 'the engine answered');
      this.heard = true;
      for (const lease of answer.leases) {
        const run = this.runs.get(runKey(lease.threadId, lease.turnId));
        if (!lease.held && run?.token === lease.token) {
          this.log.warn({ workerId: this.workerId, threadId: lease.threadId, turnId: lease.turnId, lease: lease.token }, 'lease lost: stopping the turn');
          run.controller.abort({ kind: 'leaseLost' } satisfies StopReason);
        }
      }
    } catch (error) {
      // The engine is away (restarting, or NATS is): keep working, keep saying hello.
      if (isTransient(error) && this.heard) this.log.warn({ ...errorFields(error), workerId: this.workerId }, 'the engine does not answer; still working, still asking');
      this.heard = !isTransient(error) && this.heard;
      if (!isTransient(error)) this.log.error({ ...errorFields(error), workerId: this.workerId }, 'hello refused');
    } finally {
      if (!this.stopping) {
        this.heartbeat = setTimeout(() => void this.beat(), this.heartbeatMs);
        this.heartbeat.unref();
      }
    }
  }

  private get capacity(): number {
    return this.options.concurrency ?? 64;
  }

  /** Claims an offered turn if there is room; losing the race to another worker is fine. */
  private take(threadId: string, turnId: string): void {
    const key = runKey(threadId, turnId);
    if (this.stopping || this.runs.has(key) || this.runs.size >= this.capacity || this.options.takes?.(threadId) === false) return;
    const run: Run = { threadId, turnId, token: null, controller: new AbortController(), done: Promise.resolve() };
    run.done = this.run(run).finally(() => this.runs.delete(key));
    this.runs.set(key, run);
  }

  private async run(run: Run): Promise<void> {
    const { threadId, turnId } = run;
    const secret = randomBytes(32).toString('hex');
    const keyHash = createHash('sha256').update(secret).digest('hex');
    try {
      const { token } = await this.link.call<{ token: number }>('claim', { workerId: this.workerId, threadId, turnId, claimId: randomUUID(), keyHash });
      run.token = token;
      this.log.info({ workerId: this.workerId, threadId, turnId, lease: token }, 'turn claimed');
    } catch (error) {
      // Another worker won, the turn moved on, or the engine runs all it may for now: what an offer to many may end in.
      if (!(error instanceof TurnloomError) || !['conflict', 'illegal_transition', 'not_found', 'overloaded'].includes(error.code)) this.log.error({ ...errorFields(error), workerId: this.workerId, threadId, turnId }, 'claim failed');
      return;
    }
    const proof = { workerId: this.workerId, threadId, turnId, token: run.token, key: secret };
    const outbox = new Outbox(this.link, proof, this.bounds, this.closing.signal);
    const kept = this.folds.get(threadId);
    this.folds.delete(threadId);
    const fold = new ThreadWatch(new LeasedThread(this.bus, this.subjects, this.link, proof), threadId, { pollMs: 2_000, ...(kept ? { from: kept } : {}) });
    const signal = run.controller.signal;
    const stop = (reason: StopReason) => {
      if (!signal.aborted) run.controller.abort(reason);
    };
    // On the lease's own channel: whoever reads the log can tell these deltas from anyone else's.
    const live = new LiveBatcher(this.bus, this.subjects.live(this.environment, threadId, keyHash));
    let unwatch = () => {};
    let tracing: TurnTracing | undefined;
    const guard = setInterval(() => {
      if (outbox.overloaded) {
        const { events, bytes } = outbox.backlog;
        stop({ kind: 'engineAway', reason: `the engine was unreachable while ${events} events (${bytes} bytes) piled up; the turn stopped rather than hold more` });
      }
    }, 250);
    try {
      await fold.start();
      while ((await fold.loadOlderTurns()) > 0);
      const follow = () => {
        const turn = fold.context.view?.turns[turnId];
        if (!turn || turn.lease?.token !== run.token) stop({ kind: 'leaseLost' });
        else if (turn.interrupt) stop({ kind: 'interrupt', reason: turn.interrupt.reason });
      };
      const subscription = fold.store.subscribe(follow);
      unwatch = () => subscription.unsubscribe();
      follow();
      const held = fold.context.view!.turns[turnId]!;
      tracing = new TurnTracing(held.trace, { threadId, turnId, workerId: this.workerId, provider: held.provider.name });
      outbox.traceparent = tracing.traceparent;
      await runTurn({
        threadId,
        turnId,
        fold,
        outbox,
        adapter: this.options.adapterFor(fold.context.view!.turns[turnId]!.provider),
        workspace: this.options.tools ? (this.options.workspace ?? null) : null,
        tools: this.toolsFor(threadId, turnId),
        checkpoints: this.options.checkpoints,
        live: (delta) => live.add(delta),
        hooks: this.hooks,
        agents: this.agents,
        defaultAgent: this.options.defaultAgent ?? DEFAULT_AGENT,
        snapshot: (agent) => snapshotContext({ workspace: this.options.tools ? (this.options.workspace ?? null) : null, userInstructions: this.options.userInstructions ?? null, agent, provider: fold.context.view!.turns[turnId]!.provider }),
        signal,
        options: this.loop,
        log: this.log,
        tracing,
      });
      await outbox.flushed().catch(() => undefined);
      const settled = fold.context.view?.turns[turnId];
      tracing.end(settled?.state ?? 'unknown', settled?.error ?? undefined);
      this.log.info({ workerId: this.workerId, threadId, turnId, state: settled?.state, durationMs: settled ? Date.now() - settled.requestedAt : undefined }, 'turn ended here');
      // Settled: side work for the turn starts apart from it, unless the engine refused this worker's writes.
      if (!outbox.failure) await this.sideWork?.afterTurn(fold, outbox.lastSeq, proof);
    } catch (error) {
      tracing?.end('stopped', error instanceof Error ? error.message : String(error));
      if (!(error instanceof TurnloomError && (error.code === 'fenced' || error.code === 'not_found'))) this.log.error({ ...errorFields(error), workerId: this.workerId, threadId, turnId }, 'turn stopped on an error');
    } finally {
      clearInterval(guard);
      live.close();
      unwatch();
      this.keepFold(threadId, fold.context);
      fold.close();
    }
  }

  /**
   * Keeps a turn's fold of its whole thread for the thread's next turn here,
   * which then folds only the events since (see `ThreadWatchOptions.from`)
   * instead of loading every older turn again: a cost that grew with the
   * thread. The few threads used last are kept, in order of use.
   */
  private keepFold(threadId: string, { view, olderCursor, status }: ThreadWatchContext): void {
    if (!view || olderCursor !== null || status === 'failed') return;
    this.folds.set(threadId, view);
    for (const oldest of this.folds.keys()) {
      if (this.folds.size <= KEPT_FOLDS) break;
      this.folds.delete(oldest);
    }
  }

  /**
   * Resolves once no turn and no side work runs here: what a one-shot run
   * waits for before it stops. `sideWorkMs`: side work is waited for this
   * long at most (what still runs then is for `stop` to end).
   */
  async idle(sideWorkMs?: number): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs.values()].map((run) => run.done));
    await this.sideWork?.idle(sideWorkMs);
  }

  /** Stops taking turns; the ones running are interrupted and settled before this resolves (a grace period if the engine is away), side work is stopped. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.heartbeat);
    this.unlistenErrors?.();
    this.offers?.unsubscribe();
    this.tasks?.unsubscribe();
    const sideWork = this.sideWork?.stop();
    await this.taskWork.settled();
    for (const run of this.runs.values()) run.controller.abort({ kind: 'shutdown', reason: 'the worker is shutting down' } satisfies StopReason);
    const grace = setTimeout(() => this.closing.abort(), this.options.stopGraceMs ?? 5_000);
    await Promise.allSettled([...this.runs.values()].map((run) => run.done));
    clearTimeout(grace);
    this.closing.abort();
    await sideWork;
  }
}
