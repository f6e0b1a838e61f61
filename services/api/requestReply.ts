import type { z } from 'zod';
import { type ContentType, JSON_TYPE, contentTypeOf, decode, encode, isInbox } from '../../bus/index.ts';
import { type Bus, type BusMessage, type ErrorBody, type ErrorCode, type Logger, TurnloomError, errorFields, silentLogger } from '../../domain/index.ts';

/** Headers count against the server's payload limit too. */
const REPLY_HEADROOM = 4_096;

/**
 * Answers one request the way every turnloom endpoint does: JSON or msgpack by
 * content type, `{ result }` or `{ error: { code, message, details } }`, only
 * to an inbox (a caller cannot aim the answer at another subject), never
 * larger than the payload limit. `work` gets the decoded body; a typed error
 * it throws is the caller's answer, anything else is logged as a bug.
 * `mayReplyTo` narrows where answers may go (the caller's own inbox space);
 * a request that may not be answered is not run either.
 * Resolves with the error code answered, if any (`undefined`: not answered).
 * `answerTo`, for a request another engine of a cluster passed on, is where
 * the answer goes instead of the caller's reply (which the checks still look at).
 */
export async function answerRequest(bus: Bus, message: BusMessage, options: AnswerOptions, work: (body: unknown) => Promise<unknown>): Promise<ErrorCode | null | undefined> {
  const { maxPayload, label, mayReplyTo = isInbox, answerTo = message.reply, log = silentLogger, headers = {} } = options;
  // A bare publish cannot be answered (request/reply only), and replies go to inboxes only.
  if (!message.reply || !isInbox(message.reply) || !mayReplyTo(message.reply)) return undefined;
  let contentType: ContentType = JSON_TYPE;
  let body: { result: unknown } | { error: ReturnType<TurnloomError['toJSON']> };
  try {
    if (message.data.length > maxPayload) {
      throw new TurnloomError('invalid_payload', `payload of ${message.data.length} bytes is over the ${maxPayload}-byte limit`, { size: message.data.length, limit: maxPayload });
    }
    contentType = contentTypeOf(message.headers, message.data);
    body = { result: await work(decode(message.data, contentType)) };
  } catch (error) {
    if (error instanceof TurnloomError) {
      body = { error: error.toJSON() };
      logRefusal(log, label, message.subject, body.error);
    } else {
      log.error({ ...errorFields(error), subject: message.subject, stack: error instanceof Error ? error.stack : undefined }, `${label}: unexpected error`);
      body = { error: { code: 'internal', message: 'internal error', details: {} } };
    }
  }
  let data = encode(body, contentType);
  if (data.length > maxPayload - REPLY_HEADROOM) {
    const tooLarge = new TurnloomError('unavailable', `the answer (${data.length} bytes) is over the ${maxPayload}-byte limit`, { size: data.length, limit: maxPayload });
    body = { error: tooLarge.toJSON() };
    data = encode(body, contentType);
  }
  try {
    bus.publish(answerTo ?? message.reply, data, { headers: { ...headers, 'content-type': contentType } });
  } catch (error) {
    log.warn({ ...errorFields(error), subject: message.subject }, `${label}: could not reply`);
  }
  return 'error' in body ? body.error.code : null;
}

/** A caller's mistake is routine (info); a refusal for want of rights is worth a look (warn); our own failure is an error. */
function logRefusal(log: Logger, label: string, subject: string, { code, message }: ErrorBody): void {
  const line = { subject, code, error: message };
  if (code === 'internal') log.error(line, `${label}: request failed`);
  else if (code === 'forbidden') log.warn(line, `${label}: request refused`);
  else log.info(line, `${label}: request refused`);
}

export interface AnswerOptions {
  /** Larger requests are refused with `invalid_payload` before decoding. */
  maxPayload: number;
  /** Who answers, in log lines (`api`, `workers`). */
  label: string;
  /** Where answers may go (default: any inbox); the server narrows it to the caller's own inbox space. */
  mayReplyTo?: (reply: string) => boolean;
  answerTo?: string | undefined;
  /** Headers every answer carries (in a cluster: which engine answered, so a caller can address it next time). */
  headers?: Readonly<Record<string, string>>;
  log?: Logger;
}

/** Requests being answered: a server that stops waits for them, and none is left unobserved. */
export class Inflight {
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly label: string,
    private readonly log: Logger = silentLogger,
  ) {}

  track(work: Promise<unknown>): void {
    const tracked: Promise<void> = work
      .then(() => undefined)
      .catch((error: unknown) => this.log.error(errorFields(error), `${this.label}: a request failed outside its handler`))
      .finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }
}

/** The request's parameters by its schema, or an `invalid_payload` that says which field is wrong and why. */
export function parseParams<S extends z.ZodType>(schema: S, raw: unknown, method: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new TurnloomError('invalid_payload', `invalid parameters for ${method}`, {
      issues: parsed.error.issues.map(({ path, message }) => ({ path: path.join('.'), message })),
    });
  }
  return parsed.data;
}
