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
  /** Headless API request/reply: `<p>.v1.api.<method>`. */
  api(method: string): string;
  readonly apiAll: string;
  /** Committed thread events, each carrying its per-thread sequence: `<p>.v1.evt.<threadId>`. */
  events(threadId: string): string;
  readonly eventsAll: string;
  /** Ephemeral live deltas (the typing effect), never stored: `<p>.v1.live.<threadId>`. */
  live(threadId: string): string;
  readonly liveAll: string;
  /** Lifecycle actor snapshots as they change, for the live chart view: `<p>.v1.inspect.<threadId>`. */
  inspect(threadId: string): string;
  /** Worker → engine request/reply (hello, claim, record, settle, side work, thread reads): `<p>.v1.worker.<method>`. */
  worker(method: string): string;
  readonly workerAll: string;
  /** Turns waiting for a worker of an environment, offered to all of them: `<p>.v1.work.offer.<environment>`. */
  offers(environment: string): string;
  /** Work on an environment's workspace a worker does for the API (restoring a checkpoint), to one of them: `<p>.v1.work.task.<environment>`. */
  workspaceTasks(environment: string): string;
  /** Engines only: who serves this prefix (one engine per prefix): `<p>.v1.engine.claim`. */
  readonly engineClaim: string;
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
    apiAll: `${base}.api.>`,
    events: (threadId) => `${base}.evt.${withId('threadId', threadId)}`,
    eventsAll: `${base}.evt.*`,
    live: (threadId) => `${base}.live.${withId('threadId', threadId)}`,
    liveAll: `${base}.live.*`,
    inspect: (threadId) => `${base}.inspect.${withId('threadId', threadId)}`,
    worker: (method) => `${base}.worker.${method}`,
    workerAll: `${base}.worker.>`,
    offers: (environment) => `${base}.work.offer.${withId('environment', environment)}`,
    workspaceTasks: (environment) => `${base}.work.task.${withId('environment', environment)}`,
    engineClaim: `${base}.engine.claim`,
  };
}

/**
 * Replies go only to inboxes (`_INBOX.…`, or a per-user `_INBOX_<user>.…`):
 * otherwise a caller could name any subject as its reply-to and have the
 * server publish there for it, past the caller's own permissions.
 */
export const isInbox = (subject: string): boolean => /^_INBOX[A-Za-z0-9_-]*\./.test(subject);
