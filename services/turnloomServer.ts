import { type AgentProfile, type Bus, type DelegationLimits, type Logger, type ProviderAdapter, type ProviderChoice, type ReplicaStore, type ThreadStore, TurnloomError, silentLogger } from '../domain/index.ts';
import { logCommittedEvents } from './api/eventLog.ts';
import { TurnTelemetry } from './api/turnTelemetry.ts';
import { isAlive } from '../adapters/processIdentity.ts';
import { type Subjects, subjects as subjectsFor } from '../bus/index.ts';
import { ApiServer, type AuthConfig, Authenticator, DEFAULT_MAX_PAYLOAD, EngineClaim, ThreadWatches, type ThreadWatchesOptions, eventLimitFor, publishCommittedEvents, publishInspections } from './api/index.ts';
import { WorkerGateway, type WorkerGatewayOptions } from './dispatch/workerGateway.ts';
import { Engine, type EngineOptions } from './engine/engine.ts';
import { CrashRepair } from './runtime/crashRepair.ts';
import { Deadlines } from './runtime/deadlines.ts';
import { Delegation } from './runtime/delegation.ts';
import { Worker, type WorkerOptions } from './worker/worker.ts';
import type { ClusterNode } from './cluster/clusterNode.ts';
import { ENGINE_HEADER } from '../protocol/engineAddress.ts';

export { VERSION } from '../domain/version.ts';
import { VERSION } from '../domain/version.ts';

export interface TurnloomServerOptions {
  bus: Bus;
  store: ThreadStore;
  prefix?: string;
  /** Tokens and scopes; `null` (default) lets every caller do everything, for a private in-process bus. */
  auth?: AuthConfig | null;
  defaultProvider?: ProviderChoice;
  maxPayloadBytes?: number;
  /**
   * Run a local worker with these providers, by name, on the same bus (the
   * embedded default). Left out, turns wait for a worker from elsewhere.
   */
  providers?: Record<string, ProviderAdapter>;
  /** How the local worker runs turns (retries, timeouts, whether tools run…). */
  runner?: WorkerOptions['loop'];
  /** The local worker's id, environment, workspace (its tools and checkpoints), extension hooks and side work. */
  localWorker?: Pick<WorkerOptions, 'workerId' | 'environment' | 'takes' | 'workspace' | 'concurrency' | 'tools' | 'checkpoints' | 'hooks' | 'sideWork' | 'agents' | 'userInstructions' | 'defaultAgent'>;
  /** Leases, heartbeats and resumes of workers. */
  workers?: Omit<WorkerGatewayOptions, 'maxPayloadBytes'>;
  /** An interrupt nobody confirms is settled after this long (default 10 s). */
  interruptDeadlineMs?: number;
  /** An approval nobody answers expires after this long (default: never). */
  approvalTimeoutMs?: number | null;
  /** How deep a tree of child agents may grow, and how many children one turn may start (default 2 and 8). */
  delegation?: DelegationLimits;
  /** Limits of `thread.watch` (how long a watch lives unrenewed, how many). */
  watches?: ThreadWatchesOptions;
  /** How much input may wait on a thread (`EngineOptions.queue`). */
  queue?: EngineOptions['queue'];
  /**
   * Run as one engine of a cluster (`ClusterNode.open`): `store` is then the
   * node's `store`, the log lives in the cluster's JetStream stream, and
   * requests go to the engine that owns their thread.
   */
  cluster?: ClusterNode;
  /**
   * The claim on the prefix, begun by the caller as soon as its bus was up
   * (so that its listening window overlaps opening the store, the worker's
   * setup…); default: one begun here, before the engine opens.
   */
  claim?: EngineClaim;
  /**
   * Where the server says what happens (turns requested, leased and settled,
   * approvals, workers joining and lost, repairs, reverts, errors with their
   * code): a pino logger fits. Default: nowhere.
   */
  log?: Logger;
}

export interface TurnloomServer {
  engine: Engine;
  api: ApiServer;
  gateway: WorkerGateway;
  /** The worker in this process, when it runs one. */
  worker: Worker | null;
  subjects: Subjects;
  /** Settles once crash repair has gone through the turns a dead process left open, with how many it repaired. */
  repaired: Promise<number>;
  /** Stops taking requests, settles the local worker's turns, answers what is in flight, closes the engine and its store. */
  stop(): Promise<void>;
}

/**
 * The engine with its API, its side of the worker protocol and event
 * publishing on one bus, and (with providers) a local worker that reaches it
 * through that bus like any other: what `turnloom serve` runs. The store is
 * the caller's until this resolves; after that it is closed by `stop()` (or,
 * when starting fails, before the error is thrown).
 */
/** What each agent that names a provider or a model runs on: its provider (else the default) with its model (else that provider's default). */
function agentProviders(agents: Readonly<Record<string, AgentProfile>>, fallback: ProviderChoice): Record<string, ProviderChoice> {
  const choices: Record<string, ProviderChoice> = {};
  for (const [name, agent] of Object.entries(agents)) {
    if (agent.provider === undefined && agent.model === undefined) continue;
    const provider = agent.provider ?? fallback.name;
    choices[name] = { name: provider, model: agent.model ?? (provider === fallback.name ? fallback.model : null) };
  }
  return choices;
}

/** What every answer of an engine of a cluster says of it: callers address the engine that answered for a thread next time. */
const engineHeaders = (cluster: ClusterNode) => ({ [ENGINE_HEADER]: cluster.engineId });

export async function startTurnloomServer(options: TurnloomServerOptions): Promise<TurnloomServer> {
  const subjects = subjectsFor(options.prefix);
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD;
  const cluster = options.cluster;
  const replica = 'readReplica' in options.store ? (options.store as ReplicaStore).readReplica() : undefined;
  if (!cluster && replica) {
    await options.store.close();
    throw new TurnloomError('conflict', `this data folder is engine ${replica.engineId}'s copy of a cluster's log (${replica.source}): run it as an engine of that cluster, or give this engine another folder`, { replica });
  }
  const log = options.log ?? silentLogger;
  const providers = options.providers;
  let worker: Worker | null;
  try {
    // Made before anything starts, so that what it refuses (tools whose names clash) leaves nothing open.
    worker = providers
      ? new Worker({
          bus: options.bus,
          ...(options.prefix ? { prefix: options.prefix } : {}),
          ...options.localWorker,
          adapterFor: (choice) => providers[choice.name],
          log,
          ...(options.runner ? { loop: options.runner } : {}),
        })
      : null;
  } catch (error) {
    await options.store.close();
    throw error;
  }
  // The claim listens for another engine on the prefix for a moment: while the engine opens. Its answer is awaited as the API starts.
  const claim = options.claim ?? new EngineClaim(options.bus, subjects, cluster ? 'cluster' : 'single');
  claim.claim().catch(() => undefined);
  const engine = await Engine.open({ store: options.store, maxEventBytes: eventLimitFor(maxPayloadBytes), queue: options.queue, log }).catch((error: unknown) => {
    claim.release();
    throw error;
  });
  const unpublishEvents = publishCommittedEvents(engine, options.bus, subjects, log);
  const unpublishInspections = publishInspections(engine, options.bus, subjects, log);
  const unlog = logCommittedEvents(engine, log);
  const telemetry = new TurnTelemetry(engine);
  const unpublish = () => {
    unpublishEvents();
    unpublishInspections();
    unlog();
    telemetry.stop();
  };
  // In a cluster a watch is renewed often, so one lost with its engine comes back on the thread's new owner within seconds.
  const watches = new ThreadWatches(options.bus, subjects, { ...(cluster ? { ttlMs: 6_000, cluster: true } : {}), log, ...options.watches }).start(engine);
  const auth = new Authenticator(options.auth ?? null);
  const gateway = new WorkerGateway(options.bus, subjects, engine, watches, {
    // A worker that ran on this host in a process that is gone (the one that held the data folder before, say) holds nothing.
    processGone: (process) => !isAlive(process),
    // Workers carry no token: their answers go to no inbox space a principal is bound to.
    mayReplyTo: (reply) => auth.mayReplyTo(null, reply),
    ...options.workers,
    maxPayloadBytes,
    log,
    ...(cluster ? { cluster: { engineId: cluster.engineId, router: cluster.router, owns: cluster.owns }, answerHeaders: engineHeaders(cluster) } : {}),
  });
  const owns = cluster ? { owns: cluster.owns } : {};
  const deadlines = new Deadlines(engine, { interruptMs: options.interruptDeadlineMs ?? 10_000, approvalMs: options.approvalTimeoutMs ?? null, log, ...owns });
  const repair = new CrashRepair(engine, { log, ...owns, runs: (revertId) => gateway.reverting(revertId) });
  const delegation = new Delegation(engine, {
    log,
    ...owns,
    ...(cluster ? { take: cluster.takeThread, reconcileEveryMs: 2_000 } : {}),
    ...(options.delegation ? { limits: options.delegation } : {}),
  });
  let api: ApiServer;
  try {
    api = new ApiServer({
      bus: options.bus,
      engine,
      subjects,
      claim,
      watches,
      workers: gateway,
      auth,
      defaultProvider: options.defaultProvider ?? { name: 'scripted', model: null },
      agentProviders: agentProviders(options.localWorker?.agents ?? {}, options.defaultProvider ?? { name: 'scripted', model: null }),
      ...(options.providers ? { providers: Object.keys(options.providers) } : {}),
      maxPayloadBytes,
      version: VERSION,
      log,
      telemetry,
      ...(cluster ? { cluster: { router: cluster.router, health: () => ({ ...cluster.health() }) }, answerHeaders: engineHeaders(cluster) } : {}),
    });
    if (cluster) {
      const served = api;
      await cluster.start({
        engine,
        adopt: async (threadId) => {
          // A thread taken to be made has nothing to take up yet.
          if (!engine.summary(threadId)) return;
          await gateway.adopt(threadId);
          await deadlines.adopt(threadId);
          await repair.adopt(threadId);
        },
        forget: (threadId) => {
          gateway.forget(threadId);
          deadlines.forget(threadId);
          watches.dropThread(threadId);
        },
        busy: (threadId) => watches.watching(threadId),
        serve: { api: (message, answerTo) => served.handle(message, answerTo), worker: (message, answerTo) => gateway.handle(message, answerTo) },
        intake: {
          pause: () => {
            served.pauseIntake();
            gateway.pauseIntake();
          },
          resume: () => {
            served.resumeIntake();
            gateway.resumeIntake();
          },
        },
      });
    }
    await api.start();
  } catch (error) {
    claim.release();
    await cluster?.stop().catch(() => undefined);
    watches.stop();
    unpublish();
    await engine.close();
    throw error;
  }
  await gateway.start();
  await deadlines.start();
  delegation.start();
  // Publishers and the API are up: what repair writes reaches every client, and it does not hold the start.
  const repaired = repair.run();
  await worker?.start();
  return {
    engine,
    api,
    gateway,
    worker,
    subjects,
    repaired,
    stop: async () => {
      repair.stop();
      await api.stop();
      await worker?.stop();
      await repaired;
      await gateway.stop();
      deadlines.stop();
      await delegation.stop();
      watches.stop();
      await cluster?.stop();
      await engine.close();
      unpublish();
    },
  };
}
