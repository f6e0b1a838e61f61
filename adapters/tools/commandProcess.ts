import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { isolatedCommand } from './commandSandbox.ts';

/** How long a command's processes get to stop on SIGTERM before SIGKILL. */
const termGraceMs = 200;
/** How long a command gets to be gone after SIGKILL before its pipes are dropped anyway. */
const releaseMs = 1_000;

/** How the command's shell ended: its exit code, or the signal that killed it. */
export interface CommandEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CommandHandlers {
  output(chunk: string): void;
  /** The shell is done: what it started may still run (a kept command's), or is being ended. */
  ended(end: CommandEnd): void;
  failed(error: Error): void;
  /** The shell has exited and every pipe was closed (or dropped). */
  closed(): void;
}

export interface CommandSettings {
  cwd: string;
  env: NodeJS.ProcessEnv;
  isolated: boolean;
  /** Folders and files an isolated command sees empty (real paths, existing, not holding `cwd`). */
  hidden: readonly string[];
}

/**
 * Set on every process of a command run without isolation, so that those
 * which left its process group (`setsid`) can still be found in /proc; one
 * that clears it on purpose is not, which is the limit of running without
 * isolation.
 */
const MARKER = 'TURNLOOM_COMMAND';

function marked(marker: string): number[] {
  const needle = `${MARKER}=${marker}`;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      return readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(needle);
    } catch {
      return false;
    }
  }).map(Number);
}

function signal(pid: number, sent: NodeJS.Signals): void {
  try {
    process.kill(pid, sent);
  } catch {
    // ESRCH: it has gone already, which is the point.
  }
}

function groupAlive(leader: number | undefined): boolean {
  if (leader === undefined) return false;
  try {
    process.kill(-leader, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const pollMs = 20;

/** Resolves once `check` holds, or after `ms` at the latest. */
async function until(check: () => boolean, ms: number): Promise<void> {
  for (const deadline = Date.now() + ms; !check() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, pollMs));
}

/** Every command started in this process of which something may still run, for the exit hook. */
const running = new Set<CommandProcess>();
let exitHooked = false;

/**
 * One bash command line as processes: a process group of its own, and when
 * isolated its own PID and mount namespaces (`commandSandbox.ts`). It says
 * when the shell ended, which is not when everything the shell started has:
 * that ends with it (the namespace's init exits; without isolation the
 * group and the marked processes are stopped), unless the command is kept,
 * and at `stop`, or when this process exits, at the latest.
 */
export class CommandProcess {
  private readonly child: ChildProcess;
  private readonly marker = randomUUID();
  private done = false;
  private stopping: Promise<void> | undefined;

  constructor(
    script: string,
    keep: boolean,
    private readonly settings: CommandSettings,
    handlers: CommandHandlers,
  ) {
    const { isolated, cwd, env } = settings;
    const { file, args } = isolated ? isolatedCommand(script, { keep, hidden: settings.hidden }) : { file: '/bin/bash', args: ['-c', script] };
    this.child = spawn(file, args, {
      cwd,
      detached: true,
      // Isolated, stderr carries only what the wrapper says when it fails, and fd 3 the exit status.
      stdio: isolated ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'ignore'],
      env: isolated ? env : { ...env, [MARKER]: this.marker },
    });
    running.add(this);
    hookExit();
    const end = (shell: CommandEnd): void => {
      if (this.done) return;
      this.done = true;
      // Isolated, the init's exit has killed the namespace already.
      if (!keep && !isolated) void this.stop();
      handlers.ended(shell);
    };
    for (const stream of [this.child.stdout, this.child.stderr]) stream?.setEncoding('utf8').on('data', handlers.output);
    let status = '';
    (this.child.stdio[3] as NodeJS.ReadableStream | null)?.on('data', (chunk: Buffer) => {
      status += chunk.toString('latin1');
      if (status.includes('\n')) end({ code: Number(status.trim()), signal: null });
    });
    this.child.on('error', (error) => {
      this.done = true;
      running.delete(this);
      handlers.failed(error);
    });
    this.child.on('exit', (code, exitSignal) => {
      // Isolated, `unshare` is gone only once its namespace is; an exit without a status means the wrapper failed (its words are in the output) or was killed.
      if (isolated) running.delete(this);
      end({ code, signal: exitSignal });
    });
    this.child.on('close', handlers.closed);
  }

  /**
   * Ends all of it: SIGTERM, then SIGKILL to what is left after a grace; then
   * its pipes are dropped. Resolves once nothing of it runs (or, without
   * isolation, nothing that can still be found).
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.signalAll('SIGTERM');
      await until(() => this.gone(), termGraceMs);
      this.signalAll('SIGKILL');
      await until(() => this.gone(), releaseMs);
      this.release();
      running.delete(this);
    })();
    return this.stopping;
  }

  /** The call's result is in: nothing more is read, and pipes a leftover holds are closed. */
  release(): void {
    for (const stream of this.child.stdio) stream?.destroy();
  }

  /** SIGKILL to everything, now: this process is exiting. */
  killNow(): void {
    this.signalAll('SIGKILL');
  }

  private gone(): boolean {
    if (this.settings.isolated) return this.child.exitCode !== null || this.child.signalCode !== null;
    return !groupAlive(this.child.pid) && marked(this.marker).length === 0;
  }

  private signalAll(sent: NodeJS.Signals): void {
    // Isolated, the group holds `unshare`, whose death kills the namespace's init and so everything in it.
    if (this.child.pid !== undefined) signal(-this.child.pid, sent);
    if (!this.settings.isolated) for (const pid of marked(this.marker)) signal(pid, sent);
  }
}

/**
 * An orderly exit of this process kills every command still running;
 * isolated ones die with it anyway (`--pdeathsig`), and a `kill -9` leaves
 * no other way.
 */
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => {
    for (const command of running) command.killNow();
  });
}

/** Commands kept running after their call, by turn, until the turn ends (`null`: a call made outside any turn, kept until this process exits). */
export class KeptCommands {
  private readonly byTurn = new Map<string | null, CommandProcess[]>();

  keep(turnId: string | null, command: CommandProcess): void {
    this.byTurn.set(turnId, [...(this.byTurn.get(turnId) ?? []), command]);
  }

  async endTurn(turnId: string): Promise<void> {
    const kept = this.byTurn.get(turnId) ?? [];
    this.byTurn.delete(turnId);
    await Promise.all(kept.map((command) => command.stop()));
  }
}
