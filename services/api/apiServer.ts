import { randomUUID } from 'node:crypto';
import { type Bus, type BusMessage, type BusSubscription, type Logger, type ProviderChoice, TurnloomError, silentLogger } from '../../domain/index.ts';
import { type Subjects, isInbox } from '../../bus/index.ts';
import type { Engine } from '../engine/engine.ts';
import { type ApiContext, apiHandlers } from './apiHandlers.ts';
import type { WorkerDirectory } from './workerDirectory.ts';
import { EVENT_ENVELOPE_BYTES } from '../../protocol/apiResults.ts';
import { type ApiMethod, apiMethods, apiParams, isApiMethod } from '../../protocol/apiSchemas.ts';
import { type Authenticator, type Principal, requireScope } from './auth.ts';
import { EngineClaim } from './engineClaim.ts';
import { Inflight, answerRequest, parseParams } from './requestReply.ts';
import type { ThreadWatches } from './threadWatches.ts';
import { type EndpointStats, serveDiscovery } from './serviceDiscovery.ts';
import type { TurnTelemetry } from './turnTelemetry.ts';
import { TRACEPARENT_HEADER } from '../../protocol/traceContext.ts';

export interface ApiServerOptions {
  bus: Bus;
  engine: Engine;
  subjects: Subjects;
  /** The claim on the prefix, when the caller began it earlier (its window then overlaps the rest of the start); else the server makes its own. */
  claim?: EngineClaim;
  auth: Authenticator;
  defaultProvider: ProviderChoice;
  /** The provider choice of each agent that names one (see `ApiContext`). */
  agentProviders?: Readonly<Record<string, ProviderChoice>>;
  /** Provider names turns may ask for; left out when turns run elsewhere. */
  providers?: readonly string[];
  /** Larger requests are refused with `invalid_payload` before decoding. Default 1 MiB. */
  maxPayloadBytes?: number;
  watches: ThreadWatches;
  workers: WorkerDirectory;
  version: string;
  log?: Logger;
  telemetry?: TurnTelemetry;
  /**
   * In a cluster: requests go to the engine that owns their thread
   * (`services/cluster`), and the prefix is shared with the other engines
   * of the cluster rather than held alone.
   */
  cluster?: { router: RequestRouting; health(): Record<string, unknown> };
  /** Headers every answer carries (see `AnswerOptions.headers`). */
  answerHeaders?: Readonly<Record<string, string>>;
}

/** Serves a request here, or has it served by another engine (a cluster's). */
export interface RequestRouting {
  route(message: BusMessage, serve: (message: BusMessage) => Promise<void>): Promise<void>;
}

export const API_QUEUE_GROUP = 'turnloom-api';

/** NATS's own default `max_payload`. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** What one answer's content may take: half the payload limit, so either encoding fits with headers to spare. */
export const replyBudgetFor = (maxPayloadBytes: number): number => Math.floor(maxPayloadBytes / 2);

/** The largest one stored event may be, so that `thread.events` can always send it whole. */
export const eventLimitFor = (maxPayloadBytes: number): number => replyBudgetFor(maxPayloadBytes) - EVENT_ENVELOPE_BYTES;

/** Who calls a method that needs no scope (health): nobody in particular. */
const unauthenticated: Principal = { name: 'anonymous', scopes: new Set(), inboxPrefix: null };

/**
 * The headless API: request/reply on `<prefix>.v1.api.<method>`, JSON or
 * msgpack by content type, every answer `{ result }` or `{ error: { code,
 * message, details } }`. Mutating methods go through the engine with a command
 * id, so retries are safe.
 */
export class ApiServer {
  private readonly options: ApiServerOptions;
  private readonly maxPayload: number;
  private readonly stats = new Map<string, EndpointStats>();
  private readonly subscriptions: BusSubscription[] = [];
  /** The queue group's subscriptions, apart: `pauseIntake` leaves them for the others of the group. */
  private intake: BusSubscription[] = [];
  private readonly inflight: Inflight;
  private readonly log: Logger;
  readonly instance = randomUUID().replaceAll('-', '').slice(0, 22);
  private readonly startedAt = new Date();
  private readonly claim: EngineClaim;

  constructor(options: ApiServerOptions) {
    this.options = options;
    this.maxPayload = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD;
    this.log = options.log ?? silentLogger;
    this.inflight = new Inflight('api', this.log);
    this.claim = options.claim ?? new EngineClaim(options.bus, options.subjects, options.cluster ? 'cluster' : 'single');
    for (const method of apiMethods) {
      // Micro endpoint names allow only letters, digits, "_" and "-"; the subject keeps the dotted method.
      this.stats.set(method, { name: method.replaceAll('.', '_'), subject: options.subjects.api(method), requests: 0, errors: 0, lastError: null, processingNanos: 0 });
    }
  }

  /** Takes the prefix (or throws `PrefixTaken` when another engine has it), then serves. */
  async start(): Promise<this> {
    const { bus, subjects } = this.options;
    await this.claim.claim();
    this.resumeIntake();
    this.subscriptions.push(
      ...serveDiscovery(
        bus,
        {
          name: subjects.prefix === 'turnloom' ? 'turnloom' : subjects.prefix.replace(/[^A-Za-z0-9_-]/g, '_'),
          id: this.instance,
          version: this.options.version,
          description: 'turnloom headless API: threads, turns, approvals over request/reply',
          metadata: { prefix: subjects.prefix },
          queueGroup: API_QUEUE_GROUP,
          startedAt: this.startedAt,
        },
        () => [...this.stats.values()],
      ),
    );
    return this;
  }

  /**
   * Stops taking requests from the queue group every engine of the prefix
   * shares, so the bus hands them to the others (an engine of a cluster that
   * cannot serve for now); what is in flight is still answered.
   */
  pauseIntake(): void {
    for (const subscription of this.intake.splice(0)) subscription.unsubscribe();
  }

  /** Takes requests from the queue group again (and on `start`). */
  resumeIntake(): void {
    if (this.intake.length > 0) return;
    this.intake = this.options.subjects.apiAll.map((subject) => this.options.bus.subscribe(subject, (message) => this.inflight.track(this.receive(message)), { queue: API_QUEUE_GROUP }));
  }

  private receive(message: BusMessage): Promise<void> {
    const router = this.options.cluster?.router;
    return router ? router.route(message, (routed) => this.handle(routed)) : this.handle(message);
  }

  /** Serves one request here; `answerTo`: where the answer goes when another engine passed the request on (see `answerRequest`). */
  async handle(message: BusMessage, answerTo?: string): Promise<void> {
    const started = process.hrtime.bigint();
    const method = message.subject.slice(this.options.subjects.api('').length);
    // Another's inbox: nothing is run and nothing published there; all that is left of it is a `forbidden` in the method's stats.
    const foreign = message.reply !== undefined && isInbox(message.reply) && !this.options.auth.mayReplyTo(this.options.auth.identify(message.headers), message.reply);
    if (foreign) this.log.warn({ subject: message.subject, code: 'forbidden', error: 'the reply subject is another caller\'s inbox' }, 'api: request refused');
    const code = foreign ? 'forbidden' : await answerRequest(this.options.bus, message, { maxPayload: this.maxPayload, label: 'api', answerTo, log: this.log, ...(this.options.answerHeaders ? { headers: this.options.answerHeaders } : {}) }, (body) => this.dispatch(method, message, body));
    const stats = isApiMethod(method) ? this.stats.get(method) : undefined;
    if (!stats || code === undefined) return;
    stats.requests += 1;
    stats.processingNanos += Number(process.hrtime.bigint() - started);
    if (code !== null) {
      stats.errors += 1;
      stats.lastError = code;
      this.options.telemetry?.requestFailed(method, code);
    }
  }

  private async dispatch(method: string, message: BusMessage, raw: unknown): Promise<unknown> {
    if (!isApiMethod(method)) throw new TurnloomError('not_found', `unknown method "${method}"`, { method, methods: apiMethods });
    const handler = apiHandlers[method];
    const principal = handler.scope ? this.options.auth.principalFor(message.headers) : unauthenticated;
    if (handler.scope && handler.scope !== 'any') requireScope(principal, handler.scope, method);
    const params = parseParams(apiParams[method], raw, method);
    const context: ApiContext = {
      engine: this.options.engine,
      principal,
      replyTo: message.reply!,
      watches: this.options.watches,
      workers: this.options.workers,
      defaultProvider: this.options.defaultProvider,
      agentProviders: this.options.agentProviders ?? {},
      providers: this.options.providers ?? null,
      replyBudgetBytes: replyBudgetFor(this.maxPayload),
      service: { name: 'turnloom', version: this.options.version, instance: this.instance, startedAt: this.startedAt.getTime() },
      ...(this.options.cluster ? { cluster: this.options.cluster.health } : {}),
      ...(this.options.telemetry ? { telemetry: this.options.telemetry } : {}),
      ...(message.headers[TRACEPARENT_HEADER] ? { traceparent: message.headers[TRACEPARENT_HEADER] } : {}),
    };
    return (handler.handle as (context: ApiContext, params: unknown) => Promise<unknown>)(context, params);
  }

  /** Stops taking requests and waits for those in flight to be answered. */
  async stop(): Promise<void> {
    this.pauseIntake();
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
    this.claim.release();
    await this.inflight.settled();
  }
}

export type { ApiMethod };
