import type { ZodType } from 'zod';
import { parseJsonText } from '../services/config/index.ts';
import { UsageError, readUserFile, summarizeZodError } from './cliErrors.ts';

// Its own file: the config package (its schemas, jsonc-parser) loads only for a command that reads a JSON file, never for --help or --version.

export interface JsonFileOptions {
  /** What the file should hold, for the message: "an auth file". */
  expected: string;
  /** Called with the parsed JSON before the schema check (to register secrets it holds). */
  inspect?: (raw: unknown) => void;
  /** Rewrites a failing path before it is shown (to hide secrets used as keys). */
  hidePath?: (path: PropertyKey[]) => PropertyKey[];
}

/** Reads, parses and schema-checks a JSON file the user named; every failure is one `UsageError` line. */
export function readJsonFile<S extends ZodType>(option: string, path: string, schema: S, options: JsonFileOptions): ReturnType<S['parse']> {
  const text = readUserFile(option, path);
  // Strict JSON, as every other tool that writes these files does; where it is not, where and why but never the text (a file named by mistake, /etc/shadow, must not be printed).
  const parsed = parseJsonText(text, 'json');
  if (!parsed.ok) {
    const { line, column, problem } = parsed.error;
    throw new UsageError(`${option} ${path}:${line}:${column}: not JSON (${problem}); expected ${options.expected}`);
  }
  const raw = parsed.value;
  options.inspect?.(raw);
  const checked = schema.safeParse(raw);
  if (!checked.success) throw new UsageError(`${option} ${path}: not ${options.expected}: ${summarizeZodError(checked.error, options.hidePath)}`);
  return checked.data as ReturnType<S['parse']>;
}

