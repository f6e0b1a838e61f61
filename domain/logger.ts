/** Fields that go with a log line: what it is about (ids, codes, durations), never secrets. */
export type LogFields = Record<string, unknown>;

/**
 * Where library code says what it did: the program that embeds turnloom
 * passes its own (a pino logger fits), the CLI one that prints. Library code
 * never prints by itself.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

const nothing = (): void => undefined;

/** Says nothing: the default where nobody passed a logger. */
export const silentLogger: Logger = { debug: nothing, info: nothing, warn: nothing, error: nothing };
