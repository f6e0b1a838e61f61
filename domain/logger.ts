/** What goes with a log line: what it is about (ids, codes, durations), never secrets. */
export type LogFields = Record<string, unknown>;

/** One level of a logger: the fields first, then the message, as pino takes them. */
export type LogMethod = (fields: LogFields, message: string) => void;

/**
 * Where library code says what it did. A program that embeds turnloom
 * passes its own (a pino logger fits as it is); the CLI passes one that
 * prints lines or JSON. Library code never prints by itself: the default
 * says nothing.
 */
export interface Logger {
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

const nothing = (): void => undefined;

/** Says nothing: the default where nobody passed a logger. */
export const silentLogger: Logger = { debug: nothing, info: nothing, warn: nothing, error: nothing };

/** An error as log fields: its code (a `TurnloomError`'s) and message, never its stack's secrets. */
export function errorFields(error: unknown): LogFields {
  if (error instanceof Error) return { error: error.message, ...('code' in error && typeof error.code === 'string' ? { code: error.code } : {}) };
  return { error: String(error) };
}
