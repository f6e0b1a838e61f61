import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RecordedRequest, serveRecordedStream } from '../adapters/providers/recordedStreamServer.ts';

/**
 * A four-step coding task for `turnloom run` against a local fake model
 * (OpenAI Chat wire format, answered at once): read a file, edit it, run a
 * command, answer. What the start-up suite times of it: spawn to the first
 * model request reaching the server, and the last byte of the final answer
 * to the process's exit (whatever the run does in between: side work,
 * printing the summary and diff, shutting down).
 */

/** One Chat Completions chunk as a server sends it. */
const chunk = (delta: unknown, finish: string | null = null, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_770_000_000, model: 'gpt-bench', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra });
const usage = JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_770_000_000, model: 'gpt-bench', choices: [], usage: { prompt_tokens: 200, completion_tokens: 20, total_tokens: 220 } });

const toolCall = (id: string, name: string, input: unknown): string[] => [
  chunk({ role: 'assistant', content: null }),
  chunk({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: JSON.stringify(input) } }] }),
  chunk({}, 'tool_calls'),
  usage,
];
const text = (words: string): string[] => [chunk({ role: 'assistant', content: '' }), ...(words.match(/.{1,8}/gs) ?? []).map((piece) => chunk({ content: piece })), chunk({}, 'stop'), usage];

/** The task's model calls, in order; the last is the final answer. */
const steps: string[][] = [
  toolCall('call_1', 'read', { path: 'src/greet.js' }),
  toolCall('call_2', 'edit', { path: 'src/greet.js', oldText: "'helo'", newText: "'hello'" }),
  toolCall('call_3', 'bash', { command: 'git diff --stat' }),
  text('The greeting now says hello; git shows the one-line change.'),
];

/** Side work's calls (a title, a summary) offer no tools: they get one short line. */
const isTurnCall = (body: unknown) => (body as { tools?: unknown } | null)?.tools !== undefined;

export interface RunTimes {
  /** ms from spawn to the first model request reaching the server. */
  firstRequest: number;
  /** ms from the last byte of the final answer to the process's exit. */
  answerToExit: number;
}

const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, stdio: 'ignore' });

/** A git repository with one file holding the typo the task fixes. */
export function taskWorkspace(path: string): void {
  mkdirSync(join(path, 'src'), { recursive: true });
  writeFileSync(join(path, 'src/greet.js'), "export const greet = (name) => `${'helo'} ${name}`;\n");
  git(path, 'init', '-q');
  git(path, 'config', 'user.name', 'Bench');
  git(path, 'config', 'user.email', 'bench@example.invalid');
  git(path, 'config', 'commit.gpgsign', 'false');
  git(path, 'add', '-A');
  git(path, 'commit', '-q', '-m', 'greet');
}

/** Spawns `node <args>` with `env`, and resolves with its exit time once it exited 0 (rejects with its output otherwise). */
export function spawnToExit(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): { started: number; exited: Promise<number> } {
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (part: Buffer) => void (output += part.toString()));
  child.stderr.on('data', (part: Buffer) => void (output += part.toString()));
  const exited = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const at = performance.now();
      clearTimeout(timer);
      if (code === 0) resolve(at);
      else reject(new Error(`node ${args.join(' ')} exited (${code ?? signal}):\n${output}`));
    });
  });
  return { started, exited };
}

/**
 * One `turnloom run` of the task in a new workspace and data folder under
 * `folder`. `nodeArgs` go before the script (`--cpu-prof`, to profile it).
 */
export async function timeRun(bin: string, folder: string, env: NodeJS.ProcessEnv, timeoutMs: number, nodeArgs: string[] = []): Promise<RunTimes> {
  const workspace = join(folder, 'workspace');
  taskWorkspace(workspace);
  let turnCalls = 0;
  const server = await serveRecordedStream('openai-chat', (body) => ({ kind: 'stream', chunks: isTurnCall(body) ? steps[Math.min(turnCalls++, steps.length - 1)]! : text('Greeting fixed') }));
  try {
    const runEnv = { ...env, OPENAI_API_KEY: 'bench-key', OPENAI_BASE_URL: server.baseURL, TURNLOOM_PROVIDER: 'openai-chat', TURNLOOM_MODEL: 'gpt-bench', GIT_CONFIG_NOSYSTEM: '1' };
    const args = [...nodeArgs, bin, 'run', 'fix the greeting typo in src/greet.js', '--data', join(folder, 'data'), '--approve', 'auto', '--mode', 'full'];
    const { started, exited } = spawnToExit(args, { cwd: workspace, env: runEnv, timeoutMs });
    const exitedAt = await exited;
    const turn = server.requests.filter((request) => isTurnCall(request.body));
    if (turn.length !== steps.length) throw new Error(`the run made ${turn.length} model calls for its turn, not ${steps.length}`);
    const finalAnswer: RecordedRequest = turn.at(-1)!;
    return { firstRequest: server.requests[0]!.receivedAt - started, answerToExit: exitedAt - finalAnswer.answeredAt! };
  } finally {
    await server.close();
  }
}

/**
 * The comparison for the exit: a bare node program that fetches the same
 * final answer from the same kind of server, reads it whole and ends.
 */
export async function timeBareFetch(folder: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<number> {
  const server = await serveRecordedStream('openai-chat', [{ kind: 'stream', chunks: steps.at(-1)! }]);
  try {
    const script = join(folder, 'fetch.mjs');
    writeFileSync(script, "const response = await fetch(process.argv[2], { method: 'POST', body: '{}' });\nawait response.text();\n");
    const { exited } = spawnToExit([script, `${server.baseURL}/chat/completions`], { cwd: folder, env, timeoutMs });
    const exitedAt = await exited;
    return exitedAt - server.requests[0]!.answeredAt!;
  } finally {
    await server.close();
  }
}
