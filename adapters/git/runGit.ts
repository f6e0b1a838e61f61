import { spawn } from 'node:child_process';
import { delimiter, isAbsolute } from 'node:path';

/*
 * Every git that turnloom runs runs on a work tree a model writes, so it runs
 * with none of the code a repository can name: its environment is built from
 * nothing, only system and global config the user wrote are read at all (and
 * of those, only the settings `carried` lists), and command-scope settings,
 * which beat every config file and everything those include, switch off
 * whatever would run a program. See "How turnloom's git runs none of the
 * repository's code" in docs/architecture.md.
 */

/** Where git runs: a folder to look for a repository from, or (once found) its work tree and git dir. */
export interface GitPlace {
  cwd: string;
  /**
   * Named on every call once known: git then looks for nothing, so neither a
   * `core.worktree` nor a `.git` file written since can move the call.
   */
  repository?: { gitDir: string; workTree: string };
}

export interface GitOptions {
  /** Added to the call's environment for this one call only. */
  env?: Record<string, string>;
  /** Exit codes that mean "nothing found" (rev-parse --quiet) and yield empty output instead of an error, when git says nothing on stderr. */
  emptyOnExit?: number[];
}

/** All git takes from this process's environment: where home, temporary files and the locale are. */
const passedOn = ['HOME', 'USERPROFILE', 'XDG_CONFIG_HOME', 'TMPDIR', 'TEMP', 'TMP', 'SYSTEMROOT', 'LANG', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES', 'TZ'];

/** Where the user keeps system and global config: read by the one call that looks for what is `carried`. */
const configLocations = ['GIT_CONFIG_GLOBAL', 'GIT_CONFIG_SYSTEM', 'GIT_CONFIG_NOSYSTEM'];

/**
 * Fixed for every call: no pager or prompt, and no transport at all. Our
 * commands never fetch, but a partial clone fetches a missing object by
 * itself, and a fetch is where an ssh command, proxy command, credential
 * helper, askpass program or remote helper would run: with no protocol
 * allowed, none can.
 */
const inert = { GIT_PAGER: 'cat', PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', GIT_ALLOW_PROTOCOL: '' };

/** No system or global config: they may set anything `neutralised` sets, and a work tree that is the user's home holds the global one. */
const withoutUserConfig = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/**
 * Command-scope settings that switch off every program the repository's
 * config could have git run on the commands we use: the fsmonitor hook, all
 * hooks (`post-index-change` runs on `add`, `reference-transaction` on
 * `update-ref`), pager, editors, signing, and the recursion into submodules
 * (whose own config we do not read) of `read-tree -u` and of a submodule
 * diff. Diff drivers and external diffs are off by `--no-ext-diff
 * --no-textconv` on every diff (checkpoints.ts); merge drivers need a merge.
 */
const neutralised: Array<[string, string]> = [
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['commit.gpgSign', 'false'],
  ['submodule.recurse', 'false'],
  ['diff.submodule', 'short'],
];

/**
 * The user's own settings, from system or global config, that only name
 * files or folders and that checkpoints must keep honouring: which files are
 * ignored (else a revert to a checkpoint taken while they were ignored would
 * delete them), and which repositories owned by someone else the user trusts.
 */
const carried = { excludesFile: 'core.excludesfile', safeDirectory: 'safe.directory' };

function fromProcess(names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

function baseEnvironment(place: GitPlace): Record<string, string> {
  // A relative PATH entry would find a `git` in the work tree.
  const path = (process.env.PATH ?? '').split(delimiter).filter((folder) => isAbsolute(folder));
  const env = { ...fromProcess(passedOn), PATH: path.join(delimiter) };
  return place.repository === undefined ? env : { ...env, GIT_DIR: place.repository.gitDir, GIT_WORK_TREE: place.repository.workTree };
}

/** Command-scope config as GIT_CONFIG_COUNT pairs: unlike `-c name=value`, a name holding `=` (a filter named `a=b`) stays whole. */
function asConfigEnvironment(settings: Array<[string, string]>): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
  settings.forEach(([name, value], index) => {
    env[`GIT_CONFIG_KEY_${index}`] = name;
    env[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  return env;
}

/**
 * What an operation must override besides `neutralised`, read from every
 * config git will read for it (includes and conditional includes followed) plus the
 * user's system and global config: every filter driver by name (drivers are
 * named by the repository, so they cannot be listed in advance), emptied so
 * that `git add` stores and `read-tree -u` writes the bytes as they are; and
 * the `carried` settings of system and global config.
 */
async function overridesFor(place: GitPlace): Promise<Array<[string, string]>> {
  const names = [`filter\\..*\\.[^.]*`, ...Object.values(carried).map((name) => name.replace('.', '\\.'))];
  const listing = await spawnGit(place.cwd, ['config', '-z', '--show-scope', '--get-regexp', `^(${names.join('|')})$`], {
    env: { ...baseEnvironment(place), ...inert, ...fromProcess(configLocations) },
    emptyOnExit: [1],
  });
  const drivers = new Set<string>();
  const userOwn: Array<[string, string]> = [];
  let excludesFile: { value: string; fromUser: boolean } | null = null;
  const records = listing.split('\0');
  // `-z --show-scope`: `scope\0name\nvalue\0` (`name\0` for a setting without a value).
  for (let at = 0; at + 1 < records.length; at += 2) {
    const [name = '', ...lines] = records[at + 1]!.split('\n');
    const value = lines.join('\n');
    const fromUser = records[at] === 'system' || records[at] === 'global';
    if (name.startsWith('filter.')) drivers.add(name.slice(0, name.lastIndexOf('.')));
    else if (name === carried.excludesFile) excludesFile = { value, fromUser };
    else if (name === carried.safeDirectory && fromUser) userOwn.push([name, value]);
  }
  // The last value is the one in effect; the repository's own is read anyway, and must keep beating the user's.
  if (excludesFile?.fromUser) userOwn.push(['core.excludesFile', excludesFile.value]);
  const filters = [...drivers].flatMap((driver): Array<[string, string]> => [
    [`${driver}.clean`, ''],
    [`${driver}.smudge`, ''],
    [`${driver}.process`, ''],
    // A required driver that does not run fails the command.
    [`${driver}.required`, 'false'],
  ]);
  return [...userOwn, ...neutralised, ...filters];
}

/**
 * One git process, run by Node itself: a runner that waits for output
 * before it believes a process ended (simple-git waits 50 ms more for every
 * command that prints nothing: add, update-ref, a config lookup that finds
 * nothing) would put that wait on every checkpoint, several times over.
 */
function spawnGit(cwd: string, args: string[], options: { env: Record<string, string>; emptyOnExit: number[] }): Promise<string> {
  const failed = (message: string, cause?: unknown) => new Error(`git ${args.find((arg) => !arg.startsWith('-')) ?? ''} failed in ${cwd}: ${message}`, { cause });
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => reject(failed(error.message, error)));
    child.once('close', (code, signal) => {
      const said = Buffer.concat(stderr).toString('utf8').trim();
      // "Nothing found" is an expected exit that says nothing; the same code with a complaint (not a commit, say) is an error.
      if (code === 0 || (code !== null && said === '' && options.emptyOnExit.includes(code))) resolve(Buffer.concat(stdout).toString('utf8'));
      else reject(failed(said || (code === null ? `killed by ${signal}` : `exit code ${code}`)));
    });
  });
}

/** Runs one git command (an args array), running none of the repository's code. */
export type Git = (args: string[], options?: GitOptions) => Promise<string>;

/**
 * Git for one operation in `place` (a capture, a restore): what its config
 * names is read when the operation starts, which is when its files were
 * last written by anything but a running program, and such a program could
 * run its code without git anyway.
 */
export async function gitFor(place: GitPlace): Promise<Git> {
  const env = { ...baseEnvironment(place), ...inert, ...withoutUserConfig, ...asConfigEnvironment(await overridesFor(place)) };
  return (args, options = {}) => spawnGit(place.cwd, args, { env: { ...env, ...options.env }, emptyOnExit: options.emptyOnExit ?? [] });
}

/** One git command on its own. */
export async function runGit(place: GitPlace, args: string[], options: GitOptions = {}): Promise<string> {
  return (await gitFor(place))(args, options);
}
