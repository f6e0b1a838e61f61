import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));

/** A run that has not ended by itself in this long is a hang: killed and reported as timed out. */
export const RUN_DEADLINE_MS = 45_000;

export interface Folder {
  path: string;
  remove(): void;
}

/** A fresh temp folder (`mkdtemp`). */
export function plainFolder(prefix = 'turnloom-run-test-'): Folder {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8', env: gitEnv() });

/** Git without the machine's or the user's configuration getting in. */
function gitEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
}

/** A fresh temp folder that is a git repository with one commit (and a local user config). */
export function gitRepo(): Folder {
  const folder = plainFolder('turnloom-run-repo-');
  git(folder.path, 'init', '-q');
  git(folder.path, 'config', 'user.name', 'Run Test');
  git(folder.path, 'config', 'user.email', 'run-test@example.invalid');
  git(folder.path, 'config', 'commit.gpgsign', 'false');
  git(folder.path, 'commit', '-q', '--allow-empty', '-m', 'initial');
  return folder;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface RunningRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once `pattern` has appeared on the stream (rejects if the process ends first). */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp | string): Promise<void>;
  write(text: string): void;
  endInput(): void;
  exited: Promise<RunResult>;
}

/**
 * `node bin/turnloom.mjs <args>` with stdin as a pipe the test writes to.
 * The environment is this process's, without any turnloom, OpenAI or
 * Anthropic variable (no real key leaks in), plus `env`.
 */
export function startRun(args: string[], options: { cwd: string; env?: Record<string, string>; deadlineMs?: number }): RunningRun {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(TURNLOOM_|OPENAI_|ANTHROPIC_)/.test(key)),
  ) as Record<string, string>;
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd,
    env: { ...inherited, GIT_CONFIG_NOSYSTEM: '1', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const text = { stdout: '', stderr: '' };
  const waiters: Array<{ stream: 'stdout' | 'stderr'; pattern: RegExp | string; resolve: () => void; reject: (error: Error) => void }> = [];
  const seen = (stream: 'stdout' | 'stderr', pattern: RegExp | string) =>
    typeof pattern === 'string' ? text[stream].includes(pattern) : pattern.test(text[stream]);
  const check = () => {
    for (const waiter of [...waiters]) {
      if (!seen(waiter.stream, waiter.pattern)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    text.stdout += chunk.toString();
    check();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    text.stderr += chunk.toString();
    check();
  });
  // A child that has gone makes writes fail with EPIPE: that is for the test's assertions to notice, not a crash.
  child.stdin!.on('error', () => undefined);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.deadlineMs ?? RUN_DEADLINE_MS);
  const exited = new Promise<RunResult>((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      for (const waiter of waiters.splice(0)) {
        waiter.reject(new Error(`the run ended (code ${code}, signal ${signal}) before ${waiter.stream} showed ${waiter.pattern}\nstdout:\n${text.stdout}\nstderr:\n${text.stderr}`));
      }
      resolve({ code, signal, stdout: text.stdout, stderr: text.stderr, timedOut });
    }),
  );
  return {
    child,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    waitFor: (stream, pattern) =>
      seen(stream, pattern)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            if (child.exitCode !== null || child.signalCode !== null) {
              reject(new Error(`the run has ended; ${stream} never showed ${pattern}`));
              return;
            }
            waiters.push({ stream, pattern, resolve, reject });
          }),
    write: (line) => {
      child.stdin!.write(line);
    },
    endInput: () => {
      child.stdin!.end();
    },
    exited,
  };
}

/** What `run --json` ends with: the summary, its last line (docs/run-json.md). */
export const summaryOf = (stdout: string): ReturnType<typeof JSON.parse> => JSON.parse(stdout.trim().split('\n').at(-1)!);

/** A run with nothing on its input (stdin closed at once). */
export async function run(args: string[], options: { cwd: string; env?: Record<string, string>; input?: string }): Promise<RunResult> {
  const running = startRun(args, options);
  if (options.input !== undefined) running.write(options.input);
  running.endInput();
  return running.exited;
}

/** One OpenAI Chat Completions stream chunk, as a server sends it (one JSON object). */
function chatChunk(choices: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ id: 'chatcmpl-run-test', object: 'chat.completion.chunk', created: 1_770_000_000, model: 'gpt-test', choices, ...extra });
}

const usageChunk = (input: number, output: number) =>
  chatChunk([], { usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } });

/**
 * A Chat Completions answer that calls one tool: the role, the call's id and
 * name, its arguments in two pieces, `finish_reason: "tool_calls"`, usage.
 */
export const chatToolCall = (callId: string, name: string, input: unknown): string[] => chatToolCalls([{ callId, name, input }]);

/** A Chat Completions answer that calls each of `calls` in turn (as a model asking for several at once does). */
export function chatToolCalls(calls: ReadonlyArray<{ callId: string; name: string; input: unknown }>): string[] {
  return [
    chatChunk([{ index: 0, delta: { role: 'assistant', content: null }, logprobs: null, finish_reason: null }]),
    ...calls.flatMap(({ callId, name, input }, index) => {
      const args = JSON.stringify(input);
      const cut = Math.floor(args.length / 2);
      return [
        chatChunk([{ index: 0, delta: { tool_calls: [{ index, id: callId, type: 'function', function: { name, arguments: '' } }] }, logprobs: null, finish_reason: null }]),
        chatChunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(0, cut) } }] }, logprobs: null, finish_reason: null }]),
        chatChunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(cut) } }] }, logprobs: null, finish_reason: null }]),
      ];
    }),
    chatChunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]),
    usageChunk(120, 30),
  ];
}

/** A Chat Completions answer in text, streamed in a few pieces, ending with `finish_reason: "stop"`. */
export function chatText(text: string): string[] {
  const pieces = text.match(/.{1,6}/gs) ?? [text];
  return [
    chatChunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]),
    ...pieces.map((piece) => chatChunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }])),
    chatChunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]),
    usageChunk(160, 12),
  ];
}

/** The child's environment for an OpenAI-compatible server at `baseURL` (a fake key: the server is local). */
export const openAiEnv = (baseURL: string): Record<string, string> => ({
  OPENAI_API_KEY: 'test-key',
  OPENAI_BASE_URL: baseURL,
  TURNLOOM_PROVIDER: 'openai-chat',
  TURNLOOM_MODEL: 'gpt-test',
});

/**
 * What each test of the file that calls this leaves behind, undone after it,
 * newest first: what it made (`later`), and the runs it started (`start`)
 * that a failed assertion left running, stopped with their test rather than
 * left to their deadline.
 */
export function undoneAfterEach(): { later(...steps: Array<() => Promise<void> | void>): void; start: typeof startRun } {
  let steps: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const step of steps.reverse()) await step();
    steps = [];
  });
  return {
    later: (...more) => void steps.push(...more),
    start: (...args) => {
      const running = startRun(...args);
      steps.push(async () => {
        if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
        await running.exited;
      });
      return running;
    },
  };
}

