import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { type HiddenPaths, isolatedProgram } from '../tools/commandSandbox.ts';

export interface StdioTransportOptions {
  command: string;
  args: string[];
  /** The whole environment the server gets: nothing is added to it. */
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Run in namespaces of its own (see `isolatedProgram`), where its /proc shows none of this process. */
  isolated: boolean;
  /** What an isolated server sees empty (turnloom's data, secret files); checked anew at every start. */
  hidden?: HiddenPaths;
}

/** How a server's process ended, for the sentence a model reads when its call fails. */
export interface ProcessEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const stderrLinesKept = 20;
const stderrLineChars = 500;
/** How long a server has to exit once its input is closed, then once told to terminate, before it is killed. */
const exitGraceMs = 1_000;

/**
 * The SDK's stdio client transport, rewritten for what a worker needs and
 * the SDK's does not give: the exit code and signal of a server that
 * stopped, its stderr's last lines (captured, never mixed into ours), an
 * environment taken as given (the SDK's adds variables of its own), and a
 * process group, so a server started through a launcher (`npx`, `uvx`) dies
 * with its children on close.
 */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private child: ChildProcess | null = null;
  private readonly buffer = new ReadBuffer();
  private readonly stderrLines: string[] = [];
  private partialLine = '';
  private ended: ProcessEnd | null = null;
  private exited: Promise<void> = Promise.resolve();

  constructor(private readonly options: StdioTransportOptions) {}

  /** The server's process id while it runs. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** How the process ended, once it has. */
  get end(): ProcessEnd | null {
    return this.ended;
  }

  /** Waits at most `ms` for a process that is going to end, so its end can be told; a live one just costs the wait. */
  async endWithin(ms: number): Promise<void> {
    if (this.ended !== null || this.child === null) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** The last line the server wrote to stderr, if any. */
  lastStderrLine(): string | null {
    const last = this.partialLine.trim() !== '' ? this.partialLine.trim() : this.stderrLines.at(-1);
    return last ?? null;
  }

  start(): Promise<void> {
    if (this.child) return Promise.reject(new Error('the stdio transport was already started'));
    const { command, args, cwd, env, isolated, hidden } = this.options;
    let program: { file: string; args: string[] };
    try {
      // Found before the namespaces are made, so that a missing program is said as such, not as the wrapper's failure.
      program = isolated ? isolatedProgram(executable(command, cwd, env.PATH ?? ''), args, hidden?.forCommandIn(cwd) ?? []) : { file: command, args };
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      const child = spawn(program.file, program.args, {
        cwd,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        // A group of its own, so closing it reaches what a launcher started; no shell, so the command is what was given.
        detached: process.platform !== 'win32',
        shell: false,
        windowsHide: true,
      });
      this.child = child;
      this.exited = new Promise((done) => child.once('close', () => done()));
      child.once('spawn', () => resolve());
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('close', (code, signal) => {
        this.ended = { code, signal };
        this.child = null;
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stderr?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.read(chunk));
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => this.keepStderr(chunk));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) return Promise.reject(new Error('the MCP server is not running'));
    return new Promise((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Closes the server's input and waits for it to exit, as the MCP spec asks; terminates, then kills, one that does not. */
  async close(): Promise<void> {
    const child = this.child;
    if (child) {
      child.stdin?.end();
      if (!(await this.exitsWithin(exitGraceMs))) {
        this.signalGroup(child, 'SIGTERM');
        if (!(await this.exitsWithin(exitGraceMs))) {
          this.signalGroup(child, 'SIGKILL');
          await this.exited;
        }
      }
      // The process's handle finishes closing in the loop's close phase, past the next check phase: two turns, and nothing of the server is left.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    }
    this.buffer.clear();
  }

  private exitsWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      void this.exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
    try {
      if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, signal);
      else child.kill(signal);
    } catch {
      // Gone already: what the signal was for.
    }
  }

  private read(chunk: Buffer): void {
    try {
      this.buffer.append(chunk);
    } catch (error) {
      // One message past the buffer's limit (10 MB): nothing after it can be framed, so the server is stopped and restarted.
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        // A line that is no JSON-RPC (a server printing to stdout): reported, and the next line read.
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  private keepStderr(chunk: string): void {
    const lines = (this.partialLine + chunk).split('\n');
    this.partialLine = (lines.pop() ?? '').slice(-stderrLineChars);
    for (const line of lines) {
      const trimmed = line.trim();
      if (trimmed === '') continue;
      this.stderrLines.push(trimmed.slice(0, stderrLineChars));
      if (this.stderrLines.length > stderrLinesKept) this.stderrLines.shift();
    }
  }
}

/** An error as `spawn` gives it, so that a missing or forbidden program reads the same isolated or not. */
function spawnError(code: 'ENOENT' | 'EACCES', command: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`spawn ${command} ${code}`), { code });
}

/**
 * The file `command` names, as `execvp` finds it: a path (taken from
 * `cwd`) as it is, a name on the absolute folders of `PATH` (a relative
 * one would be looked up in the server's folder, which is no place for programs).
 */
function executable(command: string, cwd: string, searchPath: string): string {
  const candidates = command.includes('/') ? [path.resolve(cwd, command)] : searchPath.split(path.delimiter).filter((dir) => path.isAbsolute(dir)).map((dir) => path.join(dir, command));
  let forbidden = false;
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
    } catch {
      continue;
    }
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      forbidden = true;
    }
  }
  throw spawnError(forbidden ? 'EACCES' : 'ENOENT', command);
}
