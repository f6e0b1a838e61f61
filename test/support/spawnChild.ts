import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const childScript = fileURLToPath(new URL('./engineChild.ts', import.meta.url));

export interface EngineChild {
  process: ChildProcess;
  /** Complete stdout lines so far, parsed as JSON. */
  lines: unknown[];
  ready: Promise<void>;
  exited: Promise<void>;
  kill(): Promise<void>;
}

/** Runs test/support/engineChild.ts under tsx in its own process. */
export function spawnEngineChild(args: string[]): EngineChild {
  const child = spawn(process.execPath, ['--import', 'tsx', childScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: unknown[] = [];
  let buffer = '';
  let stderr = '';
  let resolveReady: () => void;
  let rejectReady: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const complete = buffer.split('\n');
    buffer = complete.pop()!;
    for (const line of complete) {
      const parsed = JSON.parse(line) as unknown;
      if (parsed === 'READY') resolveReady();
      else lines.push(parsed);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') rejectReady(new Error(`engine child exited (${code ?? signal}): ${stderr}`));
      resolve();
    }),
  );
  return {
    process: child,
    lines,
    ready,
    exited,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
