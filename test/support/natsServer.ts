import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installFromDebian, onPath } from './debianPackage.ts';

/** A private nats-server for tests: its own port and store dir, never the one at 4222. */
export interface NatsServerHandle {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** Graceful stop (SIGTERM) and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would; returns once the process is gone. */
  kill(): Promise<void>;
  /** Start again on the same port and store dir (after stop or kill). */
  start(): Promise<void>;
  /** stop + start. */
  restart(): Promise<void>;
  /** Stop and remove the store dir. */
  dispose(): Promise<void>;
}

export interface NatsServerOptions {
  /** Contents of a server config file (accounts, permissions…); port and store dir are still set here. */
  config?: string;
  jetstream?: boolean;
  /** Extra environment for the server process (config files may read variables from it). */
  env?: Record<string, string>;
}

export const missingNatsServerMessage =
  'nats-server is not on the PATH: install it (Debian/Ubuntu: `apt-get install nats-server`; elsewhere: https://github.com/nats-io/nats-server/releases) and run the tests again';

const installed = () => onPath('nats-server');

export function assertNatsServerInstalled(): void {
  if (installed()) return;
  const error = new Error(missingNatsServerMessage);
  error.stack = missingNatsServerMessage;
  throw error;
}

/**
 * What the suite needs, brought when it is missing and this machine lets us:
 * as root with apt-get, Debian's nats-server is installed once; otherwise
 * the run stops with one line saying what to install.
 */
export function ensureNatsServer(): void {
  installFromDebian('nats-server', 'nats-server');
  assertNatsServerInstalled();
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts one nats-server process; resolves once it says it is ready (it is killed when this process exits). */
export async function spawnNatsServer(args: string[], name: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const proc = spawn('nats-server', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server ${name} did not become ready:\n${log}`)), 15_000);
    proc.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('Server is ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`nats-server ${name} exited (${code ?? signal}) before it was ready:\n${log}`));
    });
  });
  proc.stderr?.resume();
  return proc;
}

export function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  assertNatsServerInstalled();
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'turnloom-nats-'));
  const args = ['-a', '127.0.0.1', '-p', String(port), '-sd', storeDir];
  if (options.jetstream ?? true) args.push('-js');
  if (options.config) {
    const configPath = join(storeDir, 'server.conf');
    writeFileSync(configPath, options.config);
    args.push('-c', configPath);
  }
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    child = await spawnNatsServer(args, `on port ${port}`, options.env);
  };

  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    if (!child) return;
    const proc = child;
    proc.kill(signal);
    await waitForExit(proc);
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    stop: () => stopWith('SIGTERM'),
    kill: () => stopWith('SIGKILL'),
    start,
    restart: async () => {
      await stopWith('SIGTERM');
      await start();
    },
    dispose: async () => {
      await stopWith('SIGTERM');
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
