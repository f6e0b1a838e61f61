import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));

/**
 * A CLI run that did not end by itself within this long is a hang: it is
 * killed and reported as timed out. Generous, because the machine is shared;
 * a hang is forever, so any bound catches it.
 */
export const CLI_DEADLINE_MS = 30_000;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Killed by the deadline: the command hung. */
  timedOut: boolean;
}

export interface RunningCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** stdout and stderr as they arrived. */
  output(): string;
  exited: Promise<CliResult>;
}

export interface CliOptions {
  cwd: string;
  /** Added to a copy of this process's environment, with the turnloom and provider variables removed. */
  env?: Record<string, string>;
  /** Kill and report a hang after this long (default CLI_DEADLINE_MS); `null` for a long-running serve. */
  deadlineMs?: number | null;
}

/** `turnloom <args>` as a user runs it: node bin/turnloom.mjs in its own process. */
export function startCli(args: string[], options: CliOptions): RunningCli {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('TURNLOOM_') && !['ANTHROPIC_API_KEY', 'OPENAI_API_KEY'].includes(key)),
  ) as Record<string, string>;
  const child = spawn(process.execPath, [bin, ...args], { cwd: options.cwd, env: { ...env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    output += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    output += chunk.toString();
  });
  let timedOut = false;
  const deadlineMs = options.deadlineMs === undefined ? CLI_DEADLINE_MS : options.deadlineMs;
  const timer =
    deadlineMs === null
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, deadlineMs);
  const exited = new Promise<CliResult>((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, output: () => output, exited };
}

export function runCli(args: string[], options: CliOptions): Promise<CliResult> {
  return startCli(args, options).exited;
}

/**
 * What every mistake a user can make must look like: the process ends by
 * itself with a non-zero code, prints nothing on stdout and exactly one
 * non-empty line on stderr (`turnloom: …`), with no stack frame and no Zod
 * issue array. Returns that line.
 */
export function expectOneLineFailure(result: CliResult, pattern?: RegExp): string {
  const shown = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
  expect(result.timedOut, `the command hung and was killed after ${CLI_DEADLINE_MS} ms\n${shown}`).toBe(false);
  expect(result.code, shown).not.toBe(0);
  expect(result.code, shown).not.toBeNull();
  const lines = result.stderr.split('\n').filter((line) => line.trim() !== '');
  expect(lines, shown).toHaveLength(1);
  const [line] = lines as [string];
  expect(line).toMatch(/^turnloom: \S/);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  // A Zod issue array printed whole looks like `[ { "code": …`.
  expect(result.stderr).not.toMatch(/"code":|\[\s*\{/);
  expect(result.stdout, shown).toBe('');
  if (pattern) expect(line).toMatch(pattern);
  return line;
}
