import type { LogFields, Logger } from '../domain/index.ts';
import { UsageError } from './cliErrors.ts';
import { visible } from './terminalText.ts';

export type LogFormat = 'pretty' | 'json';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const ranks: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50, silent: 100 };

/** `--log-format` and `--log-level`, checked: by default lines for a person on a terminal, JSON for a program reading a pipe. */
export function logSettings(command: string, format: string | undefined, level: string | undefined): { format: LogFormat; level: LogLevel } {
  if (format !== undefined && format !== 'pretty' && format !== 'json') throw new UsageError(`${command}: --log-format must be pretty or json, not "${format}"`);
  if (level !== undefined && !(level in ranks)) throw new UsageError(`${command}: --log-level must be one of ${Object.keys(ranks).join(', ')}, not "${level}"`);
  return { format: (format as LogFormat | undefined) ?? (process.stderr.isTTY ? 'pretty' : 'json'), level: (level as LogLevel | undefined) ?? 'info' };
}

const shown = (value: unknown): string => (typeof value === 'string' ? (/\s/.test(value) || value === '' ? JSON.stringify(value) : value) : JSON.stringify(value));

/**
 * The log of a command, on standard error (which the CLI scrubs of secrets,
 * like every line it prints): one line per thing, `HH:MM:SS.mmm level
 * message key=value…` for a person, or one JSON object per line, with
 * pino's `level`, `time` and `msg`, for a program.
 */
export function cliLogger(settings: { format: LogFormat; level: LogLevel }, bindings: LogFields = {}): Logger {
  const at = (level: Exclude<LogLevel, 'silent'>) => (fields: LogFields, message: string) => {
    if (ranks[level] < ranks[settings.level]) return;
    const all = { ...bindings, ...fields };
    if (settings.format === 'json') {
      console.error(JSON.stringify({ level: ranks[level], time: Date.now(), msg: message, ...all }));
      return;
    }
    const time = new Date().toISOString().slice(11, 23);
    const pairs = Object.entries(all)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => ` ${key}=${shown(value)}`)
      .join('');
    console.error(visible(`${time} ${level.padEnd(5)} ${message}${pairs}`));
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** The options every long-running command takes for its log. */
export const logArgOptions = {
  'log-format': { type: 'string' },
  'log-level': { type: 'string' },
} as const;

