import type { LogFields, Logger } from '../domain/index.ts';

const shown = (fields: LogFields | undefined): string =>
  Object.entries(fields ?? {})
    .map(([key, value]) => ` ${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('');

/** What a command prints of the library's log: one line per thing on standard error (scrubbed like every line the CLI prints), debug left out. */
export function consoleLogger(area: string): Logger {
  return {
    debug: () => undefined,
    info: (message, fields) => console.error(`turnloom ${area}: ${message}${shown(fields)}`),
    warn: (message, fields) => console.error(`turnloom ${area}: warning: ${message}${shown(fields)}`),
    error: (message, fields) => console.error(`turnloom ${area}: error: ${message}${shown(fields)}`),
  };
}
