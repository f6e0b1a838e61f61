import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { ZodError } from 'zod';
import { TurnloomError } from '../domain/errors.ts';

/**
 * A mistake on the command line or in a file the user named: printed as one
 * line (`turnloom: <message>`), never as a stack trace, and the process exits 2.
 * Failures of the world outside (NATS unreachable, a data folder in use) are
 * `TurnloomError`s and exit 1; anything else is our bug and keeps its stack.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const quoted = (message: string) => /'([^']+)'/.exec(message)?.[1];

/** node:util parseArgs, with its errors turned into one-line `UsageError`s that say what to do. */
export function parseOptions<T extends ParseArgsConfig>(command: string, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    const help = `see turnloom ${command} --help`;
    switch (code) {
      case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
        throw new UsageError(`${command}: unknown option ${quoted(message) ?? ''}; ${help}`);
      case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
        const option = /'(-[^' ]+)/.exec(message)?.[1] ?? 'an option';
        if (message.includes('argument missing')) throw new UsageError(`${command}: ${option} needs a value; ${help}`);
        if (message.includes('ambiguous')) throw new UsageError(`${command}: ${option} needs a value (to pass one that starts with "-", write ${option}=VALUE)`);
        throw new UsageError(`${command}: ${option} does not take a value; ${help}`);
      }
      case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
        throw new UsageError(`${command}: unexpected argument "${quoted(message) ?? ''}"; ${help}`);
      default:
        throw error;
    }
  }
}

/** The first issue of a Zod error as one line: `path.to.field: message`. */
export function summarizeZodError(error: ZodError, hidePath: (path: PropertyKey[]) => PropertyKey[] = (path) => path): string {
  let issue = error.issues[0] as (ZodError['issues'][number] & { issues?: ZodError['issues'] }) | undefined;
  if (!issue) return 'invalid';
  let path = [...issue.path];
  // Record keys and array elements report their own issues one level down.
  while (issue.issues?.[0]) {
    issue = issue.issues[0] as typeof issue;
    path = [...path, ...issue.path];
  }
  const shown = hidePath(path).map(String).join('.');
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
  return `${shown ? `${shown}: ` : ''}${issue.message}${more}`;
}

/** Reads a file the user named with `option`, with a one-line error when it cannot be read. */
export function readUserFile(option: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`${option} ${path}: no such file`);
    if (code === 'EISDIR') throw new UsageError(`${option} ${path}: is a folder, not a file`);
    if (code === 'EACCES' || code === 'EPERM') throw new UsageError(`${option} ${path}: permission denied (make the file readable by this user)`);
    if (code === 'ENOTDIR') throw new UsageError(`${option} ${path}: a part of the path is not a folder`);
    throw new UsageError(`${option} ${path}: cannot read it (${(error as Error).message})`);
  }
}

/** An integer option, checked against its bounds; `undefined` when not given. */
export function integerOption(command: string, option: string, value: string | undefined, bounds: { min: number; max?: number; unit?: string }): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value.trim());
  const unit = bounds.unit ? ` ${bounds.unit}` : '';
  if (value.trim() === '' || !Number.isSafeInteger(number)) throw new UsageError(`${command}: --${option} must be a whole number${bounds.unit ? ` of ${bounds.unit}` : ''}, not "${value}"`);
  if (number < bounds.min) throw new UsageError(`${command}: --${option} must be at least ${bounds.min}${unit}, not ${number}`);
  if (bounds.max !== undefined && number > bounds.max) throw new UsageError(`${command}: --${option} must be at most ${bounds.max}${unit}, not ${number}`);
  return number;
}

/** A positive number option (seconds and the like); `undefined` when not given. */
export function positiveOption(command: string, option: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value.trim());
  if (value.trim() === '' || !Number.isFinite(number) || number <= 0) throw new UsageError(`${command}: --${option} must be a positive number, not "${value}"`);
  return number;
}

/** A Zod validation error, known by its shape: telling it apart needs no import of Zod, which `--help` and `--version` start without. */
const isZodError = (error: unknown): error is ZodError => error instanceof Error && error.name === 'ZodError' && Array.isArray((error as { issues?: unknown }).issues);

/** One line for anything a user can cause; `undefined` for our own bugs (those keep their stack). */
export function userFacingMessage(error: unknown): string | undefined {
  if (error instanceof UsageError || error instanceof TurnloomError) return error.message;
  if (isZodError(error)) return summarizeZodError(error);
  return undefined;
}

/** Collapses a message to one line. */
export const oneLine = (message: string): string => message.replace(/\s*[\r\n]+\s*/g, ' ').trim();
