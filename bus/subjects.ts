import { TurnloomError } from '../domain/index.ts';

/** Ids that appear in subjects must be one token: no dots, wildcards or spaces. */
export const idPattern = /^[A-Za-z0-9_-]{1,128}$/;

export function assertId(kind: string, id: string): void {
  if (!idPattern.test(id)) throw new TurnloomError('invalid_payload', `${kind} "${id}" must match ${idPattern}`, { [kind]: id });
}

/**
 * Every subject turnloom uses, under one prefix (default `turnloom`), so that
 * several deployments can share a NATS server without hearing each other.
 */
export interface Subjects {
  readonly prefix: string;
  /** Headless API request/reply: `<p>.v1.api.<method>` (a method is one token, `health`, or two, `thread.get`). */
  api(method: string): string;
  /** Every method's subject, which the engines serve in a queue group: `<p>.v1.api.*` and `<p>.v1.api.*.*`. */
  readonly apiAll: readonly string[];
  /**
   * Engines of a cluster only: the API addressed to one engine, the one a
   * caller last saw answer for a thread (its owner): `<p>.v1.api.<engineId>.<method>`,
   * for a method of two tokens (every method about a thread is one): three
   * tokens after `api`, which the queue group's subscriptions never take.
   */
  apiAt(engineId: string, method: string): string;
  /** Every API subject addressed to one engine: `<p>.v1.api.<engineId>.>`. */
  apiAtAll(engineId: string): string;
  /** Committed thread events, each carrying its per-thread sequence: `<p>.v1.evt.<threadId>`. */
  events(threadId: string): string;
  readonly eventsAll: string;
  /**
   * Ephemeral live deltas (the typing effect), never stored, as the holder of
   * the lease with this key hash sends them:
   * `<p>.v1.live.<environment>.<threadId>.<channel>`, the channel being the
   * start of the key hash. The environment lets NATS permissions keep a
   * worker user to its own environments; the channel is known, among those
   * who may publish live deltas, to the lease holder alone (the worker chose
   * the key; the engine records only its hash, in `turn.leased`), and anyone
   * who reads the thread's log can compute the subject its deltas must come on.
   */
  live(environment: string, threadId: string, keyHash: string): string;
  /** Every live subject of one thread, to subscribe to: `<p>.v1.live.*.<threadId>.*`. */
  liveOf(threadId: string): string;
  /** Lifecycle actor snapshots as they change, for the live chart view: `<p>.v1.inspect.<threadId>`. */
  inspect(threadId: string): string;
  /**
   * Worker → engine request/reply (hello, claim, record, settle, side work,
   * thread reads) for the workers of one environment:
   * `<p>.v1.worker.<environment>.<method>`. NATS 2.9 tells a responder nothing
   * of who published a request, so the subject is what binds a worker user
   * to its environments: permissions grant it its own, the engine refuses a
   * message whose body names another.
   */
  worker(environment: string, method: string): string;
  /** Every worker method's subject, which the engines serve in a queue group (methods are one token, or `thread.<verb>`). */
  readonly workerAll: readonly string[];
  /**
   * Engines of a cluster only: the worker protocol addressed to one engine,
   * the owner of the worker's thread as it last answered:
   * `<p>.v1.worker.<environment>.<engineId>.<method>` (inside the environment's
   * subjects, so a worker user's permissions cover it).
   */
  workerAt(environment: string, engineId: string, method: string): string;
  /** Every worker subject addressed to one engine: `<p>.v1.worker.*.<engineId>.>`. */
  workerAtAll(engineId: string): string;
  /** The environment and the method of a subject under `workerAll`, or `undefined` when it is not one. */
  workerMethodOf(subject: string): { environment: string; method: string } | undefined;
  /** The shared subject a request addressed to one engine stands for (`apiAt`, `workerAt`), or `undefined` when it is not one of those. */
  sharedOf(subject: string, engineId: string): string | undefined;
  /** Turns waiting for a worker of an environment, offered to all of them: `<p>.v1.work.offer.<environment>`. */
  offers(environment: string): string;
  /** Work on an environment's workspace a worker does for the API (restoring a checkpoint), to one of them: `<p>.v1.work.task.<environment>`. */
  workspaceTasks(environment: string): string;
  /** Engines only: who serves this prefix (one engine per prefix, or one cluster): `<p>.v1.engine.claim`. */
  readonly engineClaim: string;
  /**
   * Engines of a cluster only: a request one engine passes on to the engine
   * that owns its thread, under the subject it came on after `<p>.v1.`:
   * `<p>.v1.engine.<engineId>.relay.api.thread.get`.
   */
  engineRelay(engineId: string, tail: string): string;
  /** Every request passed on to one engine: `<p>.v1.engine.<engineId>.relay.>`. */
  engineRelayAll(engineId: string): string;
  /**
   * Engines of a cluster only: what one engine tells all the others (a
   * worker's hello, a dropped watch, threads it may have written after it
   * lost their shards): `<p>.v1.engine.cast.<kind>`.
   */
  engineCast(kind: 'hello' | 'unwatch' | 'reread'): string;
  /** The part of a subject after `<p>.v1.` (`api.thread.get`), or `undefined` when it is not under the prefix. */
  tailOf(subject: string): string | undefined;
  /**
   * Engines of a cluster only: a thread's replicated log, one JetStream
   * subject per thread, under its shard's: `<p>.v1.log.<shard>.<threadId>`.
   */
  log(shard: number, threadId: string): string;
  /** Every thread's log of one shard, read with one filter: `<p>.v1.log.<shard>.>`. */
  logShard(shard: number): string;
  readonly logAll: string;
}

export function subjects(prefix = 'turnloom'): Subjects {
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix)) throw new TurnloomError('invalid_payload', `invalid subject prefix "${prefix}"`);
  const base = `${prefix}.v1`;
  const withId = (kind: string, id: string) => {
    assertId(kind, id);
    return id;
  };
  return {
    prefix,
    api: (method) => `${base}.api.${method}`,
    apiAll: [`${base}.api.*`, `${base}.api.*.*`],
    apiAt: (engineId, method) => `${base}.api.${withId('engineId', engineId)}.${method}`,
    apiAtAll: (engineId) => `${base}.api.${withId('engineId', engineId)}.>`,
    events: (threadId) => `${base}.evt.${withId('threadId', threadId)}`,
    eventsAll: `${base}.evt.*`,
    live: (environment, threadId, keyHash) => `${base}.live.${withId('environment', environment)}.${withId('threadId', threadId)}.${withId('keyHash', keyHash).slice(0, 32)}`,
    liveOf: (threadId) => `${base}.live.*.${withId('threadId', threadId)}.*`,
    inspect: (threadId) => `${base}.inspect.${withId('threadId', threadId)}`,
    worker: (environment, method) => `${base}.worker.${withId('environment', environment)}.${method}`,
    workerAll: [`${base}.worker.*.*`, `${base}.worker.*.thread.*`],
    workerAt: (environment, engineId, method) => `${base}.worker.${withId('environment', environment)}.${withId('engineId', engineId)}.${method}`,
    workerAtAll: (engineId) => `${base}.worker.*.${withId('engineId', engineId)}.>`,
    workerMethodOf: (subject) => {
      const rest = subject.startsWith(`${base}.worker.`) ? subject.slice(`${base}.worker.`.length) : '';
      const dot = rest.indexOf('.');
      const environment = rest.slice(0, dot);
      return dot > 0 && idPattern.test(environment) ? { environment, method: rest.slice(dot + 1) } : undefined;
    },
    offers: (environment) => `${base}.work.offer.${withId('environment', environment)}`,
    workspaceTasks: (environment) => `${base}.work.task.${withId('environment', environment)}`,
    sharedOf: (subject, engineId) => {
      const api = `${base}.api.${engineId}.`;
      if (subject.startsWith(api) && subject.indexOf('.', api.length) > 0) return `${base}.api.${subject.slice(api.length)}`;
      const worker = subject.startsWith(`${base}.worker.`) ? subject.slice(`${base}.worker.`.length).split('.') : [];
      return worker.length >= 3 && worker[1] === engineId ? [`${base}.worker`, worker[0], ...worker.slice(2)].join('.') : undefined;
    },
    engineClaim: `${base}.engine.claim`,
    engineRelay: (engineId, tail) => `${base}.engine.${withId('engineId', engineId)}.relay.${tail}`,
    engineRelayAll: (engineId) => `${base}.engine.${withId('engineId', engineId)}.relay.>`,
    engineCast: (kind) => `${base}.engine.cast.${kind}`,
    tailOf: (subject) => (subject.startsWith(`${base}.`) ? subject.slice(base.length + 1) : undefined),
    log: (shard, threadId) => `${base}.log.${shard}.${withId('threadId', threadId)}`,
    logShard: (shard) => `${base}.log.${shard}.>`,
    logAll: `${base}.log.>`,
  };
}

/**
 * Replies go only to inboxes (`_INBOX.…`, or a per-user `_INBOX_<user>.…`):
 * otherwise a caller could name any subject as its reply-to and have the
 * server publish there for it, past the caller's own permissions.
 */
export const isInbox = (subject: string): boolean => /^_INBOX[A-Za-z0-9_-]*\./.test(subject);
