import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { scrubbedEnv } from './scrubbedEnv.ts';
import { ToolError } from './toolError.ts';

const isExecutableFile = (candidate: string): boolean => {
  try {
    accessSync(candidate, constants.X_OK);
    return statSync(candidate).isFile();
  } catch {
    return false;
  }
};

/**
 * The `rg` that comes with turnloom: `@vscode/ripgrep` ships it in a package
 * per platform (an optional dependency, so an install that left those out,
 * or a platform it has none for, has none). Imported when first asked for,
 * not at the top of this module: a module that awaits at its top cannot be
 * `require`d.
 */
let bundled: Promise<string | null> | undefined;
const bundledRipgrep = (): Promise<string | null> =>
  (bundled ??= import('@vscode/ripgrep').then(
    ({ rgPath }) => (isExecutableFile(rgPath) ? rgPath : null),
    () => null,
  ));

/** The first executable `name` on `searchPath` (a PATH value), or null. */
function onPath(name: string, searchPath: string | undefined): string | null {
  for (const folder of (searchPath ?? '').split(path.delimiter)) {
    if (folder !== '' && isExecutableFile(path.join(folder, name))) return path.join(folder, name);
  }
  return null;
}

/** The `rg` to search with: the bundled one, else the first on `searchPath` (a PATH value), else null. */
export async function findRipgrep(searchPath: string | undefined): Promise<string | null> {
  return (await bundledRipgrep()) ?? onPath('rg', searchPath);
}

/** How `rg` at `rgPath` runs for a workspace whose commands get `env`. */
export function ripgrepFor(rgPath: string, env: NodeJS.ProcessEnv): Ripgrep {
  return { path: rgPath, env: scrubbedEnv(env), setpriv: process.platform === 'linux' ? onPath('setpriv', env.PATH) : null };
}

/** What glob and grep answer where there is no `rg` at all. */
export const missingRipgrep = (tool: string): ToolError =>
  new ToolError(
    `${tool} needs ripgrep (rg), which is not installed here: turnloom brings it through its optional dependency @vscode/ripgrep, which has no build for this platform or was left out (npm --omit=optional); install ripgrep (apt-get install ripgrep, brew install ripgrep) and run again`,
  );

/**
 * The flags every search starts with: no config file (`RIPGREP_CONFIG_PATH`
 * could add any flag), hidden files in, paths in walk order (each folder's
 * entries by name, so results are the same every time). Ignore files are
 * ripgrep's defaults: `.gitignore` (nested ones, those of the folders above,
 * `.git/info/exclude` and the user's global one, inside a git repository),
 * `.ignore` and `.rgignore` everywhere. Symlinks are not followed, and what
 * is not a regular file (a FIFO) is passed over unless named outright.
 */
export const searchFlags = ['--no-config', '--hidden', '--sort', 'path'] as const;

/** Last, so that no glob of the model's can bring them back (ripgrep lets the last matching glob decide). */
export const alwaysSkipped = ['--glob', '!.git', '--glob', '!node_modules'] as const;

/** An `rg` to run, and what it runs with. */
export interface Ripgrep {
  path: string;
  /**
   * Its environment, less the secrets (`scrubbedEnv`): a repository's
   * `.gitignore` may be a symlink to `/proc/self/environ`, which ripgrep
   * reads as patterns.
   */
  env: NodeJS.ProcessEnv;
  /** util-linux's `setpriv`, where there is one, to start it with a parent-death signal. */
  setpriv: string | null;
}

export interface RipgrepRun {
  rg: Ripgrep;
  args: readonly string[];
  /** Where it runs: the paths it prints and its globs are relative to this. */
  cwd: string;
  signal: AbortSignal;
  /** What ends one record of its output: `\0` after each path of `--files --null`, `\n` after each line of `--json`. */
  separator: '\0' | '\n';
  /** The model's glob as ripgrep was given it, whose parse error is the model's to read; null if none. */
  glob: string | null;
}

const maxStderrChars = 4_000;

/**
 * The most heap ripgrep may take, in KiB. It reads each ignore file whole,
 * and a repository's `.gitignore` may be a symlink to `/dev/zero`, one line
 * without end, which it would read until the machine ran out of memory; at
 * this bound it aborts instead. Ordinary searches take a few MiB.
 */
const maxHeapKib = 1_048_576;

/**
 * `rg` with its heap bounded (`ulimit -d`, where there is a POSIX shell);
 * in a session of its own (`detached`), since without a controlling
 * terminal an ignore file linked to `/dev/tty` cannot read what the person
 * types; and under `setpriv --pdeathsig KILL` where there is one, so it
 * dies with this process (`kill -9` included) even while it waits on an
 * ignore file that is a FIFO, and not in this process's group.
 */
function start(run: RipgrepRun) {
  const bounded = process.platform === 'win32' ? [run.rg.path, ...run.args] : ['/bin/sh', '-c', `ulimit -d ${maxHeapKib} 2>/dev/null; exec "$0" "$@"`, run.rg.path, ...run.args];
  const [command, ...args] = run.rg.setpriv === null ? bounded : [run.rg.setpriv, '--pdeathsig', 'KILL', '--', ...bounded];
  return spawn(command!, args, { cwd: run.cwd, env: run.rg.env, stdio: ['ignore', 'pipe', 'pipe'], signal: run.signal, detached: true });
}

/**
 * Why ripgrep failed, in words for the model. Only what concerns the
 * model's own regex or glob is quoted: ripgrep also complains about the
 * ignore files it reads, quoting their lines, and a repository's ignore
 * file may be a symlink to a file outside the workspace.
 */
function failure(run: RipgrepRun, stderr: string, code: number | null, signal: NodeJS.Signals | null): ToolError {
  if (signal === 'SIGABRT' || /memory allocation of \d+ bytes failed/.test(stderr)) {
    return new ToolError(`ripgrep ran out of memory (${maxHeapKib / 1_048_576} GiB): a file or an ignore file it read has a line without end (a .gitignore linked to a device?); narrow the path`);
  }
  if (run.glob !== null) {
    const prefix = `rg: error parsing glob '${run.glob}': `;
    const line = stderr.split('\n').find((said) => said.startsWith(prefix));
    if (line !== undefined) return new ToolError(`invalid glob: ${line.slice(prefix.length).replace(/ \(maybe escape .*\)$/, '')}`);
  }
  const regex = /^rg: regex parse error:\n(?:(?!rg: ).*\n)*?error: (.*)$/m.exec(stderr);
  if (regex !== null) return new ToolError(`invalid regex: ${regex[1]}`);
  const osErrors = stderr.split('\n').filter((said) => /^rg: .*\(os error \d+\)$/.test(said) && !/: line \d+: /.test(said));
  return new ToolError(`ripgrep failed (${signal ?? `exit code ${code}`})${osErrors.length > 0 ? `: ${osErrors[0]!.slice(4)}` : ''}`);
}

/**
 * Runs ripgrep and yields its output a record at a time, as it comes (a
 * record of megabytes, a minified line, is put together once, not copied
 * at every chunk). A consumer that stops early ends the process; so does
 * `signal`, and the generator then throws its reason. Exit 1 is "nothing
 * found"; exit 2 after some output is a file or folder it could not read,
 * which the rest of the output still stands without.
 */
export async function* ripgrepRecords(run: RipgrepRun): AsyncGenerator<string> {
  const child = start(run);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  // Awaited below, on every way out; until then a spawn failure or an abort must not count as unhandled.
  exited.catch(() => {});
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < maxStderrChars) stderr = (stderr + chunk).slice(0, maxStderrChars);
  });
  let printed = false;
  let finished = false;
  try {
    let pending: string[] = [];
    for await (const chunk of child.stdout.setEncoding('utf8') as AsyncIterable<string>) {
      let from = 0;
      for (let end = chunk.indexOf(run.separator); end !== -1; end = chunk.indexOf(run.separator, from)) {
        pending.push(chunk.slice(from, end));
        printed = true;
        yield pending.join('');
        pending = [];
        from = end + 1;
      }
      if (from < chunk.length) pending.push(chunk.slice(from));
    }
    if (pending.length > 0) {
      printed = true;
      yield pending.join('');
    }
    finished = true;
  } finally {
    if (!finished) {
      child.kill();
      await exited.catch(() => {});
    }
  }
  const { code, signal } = await exited;
  if (code === 0 || code === 1 || (code === 2 && printed)) return;
  throw failure(run, stderr, code, signal);
}
