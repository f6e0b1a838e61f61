import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type { GrepFound, GrepMatch, GrepQuery } from './grepQuery.ts';
import { ToolError } from './toolError.ts';

/** The `rg` on `searchPath` (a PATH value), or null. */
export function findRipgrep(searchPath: string | undefined): string | null {
  for (const folder of (searchPath ?? '').split(path.delimiter)) {
    if (folder === '') continue;
    const candidate = path.join(folder, 'rg');
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here; the next folder may have it.
    }
  }
  return null;
}

/**
 * Flags that make ripgrep search what the JS fallback searches, printed the
 * way it is parsed: no ignore files or config, hidden files in, `.git` and
 * `node_modules` out (last, so the model's glob cannot bring them back), no
 * symlinks followed, paths in walk order, and a NUL after each path so a `:`
 * in a file name cannot confuse the parse.
 */
function argumentsFor(query: GrepQuery): string[] {
  return [
    '--no-config',
    '--line-number',
    '--no-heading',
    '--with-filename',
    '--null',
    '--color',
    'never',
    '--no-ignore',
    '--hidden',
    '--sort',
    'path',
    ...(query.ignoreCase ? ['--ignore-case'] : []),
    ...(query.glob !== null ? ['--glob', query.glob] : []),
    '--glob',
    '!.git',
    '--glob',
    '!node_modules',
    '--regexp',
    query.pattern,
    '--',
    query.isFolder ? '.' : path.basename(query.real),
  ];
}

/** A line of output as a match; null for ripgrep's notes (a binary file named outright), which have no NUL. */
function parseLine(line: string, query: GrepQuery): GrepMatch | null {
  const nul = line.indexOf('\0');
  const colon = line.indexOf(':', nul);
  if (nul === -1 || colon === -1) return null;
  const printed = line.slice(0, nul);
  return {
    path: query.isFolder ? path.join(query.relative, printed) : query.relative,
    line: Number(line.slice(nul + 1, colon)),
    text: line.slice(colon + 1),
  };
}

const maxStderrChars = 4_000;

/**
 * Grep with ripgrep, run where the search starts (the folder, or the file's
 * folder) so the paths it prints and its globs are relative to that, as in
 * the fallback. Exit 1 means no match; a kill after the limit is no failure.
 */
export function ripgrepSearch(rg: string, query: GrepQuery): Promise<GrepFound> {
  return new Promise((resolve, reject) => {
    const child = spawn(rg, argumentsFor(query), {
      cwd: query.isFolder ? query.real : path.dirname(query.real),
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: query.signal,
    });
    const matches: GrepMatch[] = [];
    let more = false;
    let partial = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (more) return;
        const match = parseLine(line, query);
        if (match === null) continue;
        if (matches.length === query.limit) {
          more = true;
          child.kill();
        } else {
          matches.push(match);
        }
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(0, maxStderrChars);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      // Exit 2 with matches is an unreadable file somewhere; the matches still stand.
      if (more || code === 0 || code === 1 || matches.length > 0) resolve({ matches, more });
      else reject(new ToolError(`ripgrep failed: ${stderr.trim() || `exit code ${code}`}`));
    });
  });
}
