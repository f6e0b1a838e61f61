import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A `turnloom` command running in its own process, as a user starts it. */
export interface CliProcess {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves once the output holds `text` (or rejects after `timeoutMs`, with the output so far). */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): CliProcess {
  return runNode(bin, args, options);
}

/** Any node program (a script, an installed command) in its own process, followed like `runCli`'s. */
export function runNode(program: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): CliProcess {
  const child = spawn(process.execPath, [program, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  return {
    child,
    output: () => output,
    exited,
    waitFor: async (text, timeoutMs = 30_000) => {
      const found = () => (typeof text === 'string' ? output.includes(text) : text.test(output));
      for (const deadline = Date.now() + timeoutMs; !found(); ) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`waited for ${String(text)}; the process said:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    kill: async (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
