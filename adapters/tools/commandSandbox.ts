import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { scrubbedEnv } from './scrubbedEnv.ts';
import { ToolError } from './toolError.ts';

/** Whether commands run isolated here; when they do not, why. */
export type Isolation = { isolated: true } | { isolated: false; reason: string };

/**
 * PID 1 of a command's namespaces, run by `sh`, with the command's stdout
 * and stderr (where a failure to mount shows). It mounts an empty read-only
 * tmpfs over each folder to hide, and /dev/null over each file (it is root
 * of the outer user namespace, so it may), then runs the command in a user namespace of its own mapped
 * back to the user's uid and gid: there the command holds no capability
 * over these mounts, so it can neither unmount /proc (which shows only
 * this namespace) nor the hidden folders, nor read this init's memory. It
 * writes the command's exit status to fd 3, as `wait` gives it (a signal
 * as 128 + its number, as bash reports a child): the init itself only ever
 * exits with a code, which is all `unshare` could pass on. A kept call's
 * init stays, and with it the namespace and everything in it, until it is
 * killed; any other exits, and the kernel kills what is left in the
 * namespace with it.
 */
const init = [
  'uid=$1 gid=$2 keep=$3 script=$4',
  'shift 4',
  'for hidden do',
  '  if [ -d "$hidden" ]; then mount -t tmpfs -o ro,size=4k,mode=0555 turnloom-hidden "$hidden"; else mount --bind /dev/null "$hidden"; fi || exit 125',
  'done',
  'unshare --map-user="$uid" --map-group="$gid" -- /bin/bash -c "$script" 3>&- &',
  // What this shell says of its job ("Terminated") is not the command's output.
  'exec 2>/dev/null',
  'wait $!',
  'status=$?',
  'echo "$status" >&3',
  '[ "$keep" = keep ] || exit "$status"',
  'exec 3>&-',
  // A sleep killed by a signal (the SIGTERM that stops the call) is waited out again; one that cannot run ends the namespace rather than spin.
  'while :; do sleep 86400 || [ $? -gt 128 ] || exit 1; done',
].join('\n');

/**
 * The program and arguments that run `script` with bash, isolated: in new
 * user, PID and mount namespaces (`unshare`, which kills the namespace's
 * init when it dies), under `setpriv --pdeathsig KILL`, so that the death
 * of this process, `kill -9` included, kills `unshare` and so everything
 * the command started. The spawner must give it fd 3 for the exit status.
 */
export function isolatedCommand(script: string, { keep, hidden }: { keep: boolean; hidden: readonly string[] }): { file: string; args: string[] } {
  return { file: 'setpriv', args: [...namespacesRunning, '/bin/sh', '-c', init, 'turnloom-command', ...ids(), keep ? 'keep' : 'end', script, ...hidden] };
}

/** `setpriv` and `unshare` up to the program they start: new user, PID and mount namespaces, and death with this process. */
const namespacesRunning = ['--pdeathsig', 'KILL', '--', 'unshare', '--map-root-user', '--mount', '--pid', '--fork', '--mount-proc', '--kill-child=KILL', '--'];
const ids = (): string[] => [String(process.getuid?.() ?? 0), String(process.getgid?.() ?? 0)];

/**
 * The init of a long-lived program's namespaces (an MCP server): it mounts
 * over the hidden paths, as `init` does, then becomes the program in a user
 * namespace of its own (so it holds no capability over those mounts) with
 * standard input and output untouched. The program is PID 1 there: when it
 * exits, whatever it started dies with it.
 */
const programInit = [
  'uid=$1 gid=$2',
  'shift 2',
  'while [ "$1" != -- ]; do',
  '  if [ -d "$1" ]; then mount -t tmpfs -o ro,size=4k,mode=0555 turnloom-hidden "$1"; else mount --bind /dev/null "$1"; fi || exit 125',
  '  shift',
  'done',
  'shift',
  'exec unshare --map-user="$uid" --map-group="$gid" -- "$@"',
].join('\n');

/**
 * The program and arguments that run `command` with `args` (looked up on the
 * PATH it is given) isolated as a bash command is: its /proc shows only its
 * own namespace, so not this process's environment, and it dies with this
 * process, `kill -9` included. Its exit code is the program's.
 */
export function isolatedProgram(command: string, args: readonly string[], hidden: readonly string[]): { file: string; args: string[] } {
  return { file: 'setpriv', args: [...namespacesRunning, '/bin/sh', '-c', programInit, 'turnloom-program', ...ids(), ...hidden, '--', command, ...args] };
}

const quoted = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`;

const probeTimeoutMs = 10_000;

/**
 * Runs one isolated command that checks what isolation promises: its
 * parent is PID 1, the init of a fresh PID namespace (so /proc shows only
 * that namespace), and a hidden folder is read-only to it. Anything else — no `setpriv` or `unshare`,
 * user namespaces turned off, mounts refused — says why in one line.
 */
function probe(): Promise<Isolation> {
  if (process.platform !== 'linux') return Promise.resolve({ isolated: false, reason: 'commands are isolated on Linux only' });
  const hidden = mkdtempSync(path.join(tmpdir(), 'turnloom-probe-'));
  const check = `[ "$PPID" = 1 ] || { echo "no PID namespace of its own"; exit 1; }; if touch ${quoted(path.join(hidden, 'written'))} 2>/dev/null; then echo "hidden folders stay writable"; exit 1; fi`;
  const { file, args } = isolatedCommand(check, { keep: false, hidden: [hidden] });
  return new Promise<Isolation>((resolve) => {
    let said = '';
    const child = spawn(file, args, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe', 'pipe'], env: scrubbedEnv(process.env) });
    const timer = setTimeout(() => child.kill('SIGKILL'), probeTimeoutMs);
    for (const stream of [child.stdout, child.stderr]) stream!.setEncoding('utf8').on('data', (chunk: string) => (said += chunk));
    child.on('error', (error) => resolve({ isolated: false, reason: error.message }));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const why = said.trim().split('\n').at(-1);
      resolve(code === 0 ? { isolated: true } : { isolated: false, reason: why || (signal ? `the check was killed by ${signal}` : `the check exited with ${code}`) });
    });
  }).finally(() => rmSync(hidden, { recursive: true, force: true }));
}

let probed: Promise<Isolation> | undefined;

/** Whether commands can run isolated on this machine: found out once per process, by running one. */
export function isolationHere(): Promise<Isolation> {
  probed ??= probe();
  return probed;
}

/** The real path, device and inode of the folder or file at `hidden`, or null when there is none. */
function identity(hidden: string): { real: string; id: string } | null {
  try {
    const real = realpathSync(hidden);
    const stat = statSync(real);
    return stat.isDirectory() || stat.isFile() ? { real, id: `${stat.dev}:${stat.ino}` } : null;
  } catch {
    return null;
  }
}

/**
 * turnloom's own folders and secret files, hidden from isolated commands
 * by their paths, which a command could change: renaming a parent takes
 * one out from under its path (the mount over it moves along, for that
 * call only), and another may be put in its place. So each is checked,
 * before every command, to be the one first seen there; one that has gone
 * or been replaced stops commands until it is back, rather than be shown.
 */
export class HiddenPaths {
  private readonly seen = new Map<string, string>();

  constructor(private readonly paths: readonly string[]) {}

  /**
   * The real paths to hide from a command working in `cwd`: not one that
   * does not exist yet, nor a folder that holds `cwd` (it would hide the
   * workspace), nor one inside another (hidden with it).
   */
  forCommandIn(cwd: string): string[] {
    const hidden = this.paths.flatMap((given) => {
      const now = identity(given);
      const was = this.seen.get(given);
      if (was !== undefined && now?.id !== was) {
        throw new ToolError(`commands are refused: ${given}, which turnloom hides from them, has been moved or replaced since the last command; put it back, or restart turnloom`);
      }
      if (now === null) return [];
      this.seen.set(given, now.id);
      return holds(now.real, cwd) ? [] : [now.real];
    });
    return hidden.filter((one) => !hidden.some((other) => other !== one && holds(other, one)));
  }
}

/** Whether `inner` is `folder` or inside it. */
function holds(folder: string, inner: string): boolean {
  const fromFolder = path.relative(folder, inner);
  return fromFolder !== '..' && !fromFolder.startsWith(`..${path.sep}`) && !path.isAbsolute(fromFolder);
}
