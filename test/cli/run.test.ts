import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type RecordedStreamServer, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import type { RunReport } from '../../cli/run/embeddedRun.ts';
import { type Folder, type RunResult, chatText, chatToolCall, git, gitRepo, openAiEnv, plainFolder, run, undoneAfterEach } from './runFixtures.ts';
import { processesWith, uniqueTag } from '../support/processes.ts';

const workspaceTools = ['read', 'write', 'edit', 'list', 'glob', 'grep', 'bash'];
const writeHello = { path: 'hello.txt', content: 'hi from the model\n' };

/** What `run --json` prints: the run's report without the patch and the event count. */
type JsonReport = Omit<RunReport, 'events' | 'checkpoint'> & { checkpoint: Omit<NonNullable<RunReport['checkpoint']>, 'patch'> | null };

interface ChatRequestBody {
  model: string;
  messages: Array<{ role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters: unknown } }>;
}

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal} timedOut ${result.timedOut}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

/** The summary `--json` ends with, past the lines of the turn's events (all JSON with a `type`). */
function jsonOf(result: RunResult): JsonReport {
  const lines = result.stdout.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as { type: string });
  expect(lines.map((line) => typeof line.type), shown(result)).not.toContain('undefined');
  expect(lines.map((line) => line.type).indexOf('summary'), shown(result)).toBe(lines.length - 1);
  return lines.at(-1) as unknown as JsonReport;
}

const allBodies = (server: RecordedStreamServer) => server.requests.map((request) => request.body as ChatRequestBody);
/** The turn's calls, which always offer the workspace tools; side work's calls (a title, a summary) offer none. */
const bodies = (server: RecordedStreamServer) => allBodies(server).filter((body) => body.tools !== undefined);
const sideBodies = (server: RecordedStreamServer) => allBodies(server).filter((body) => body.tools === undefined);
const toolMessages = (body: ChatRequestBody) => body.messages.filter((message) => message.role === 'tool');

const undo = undoneAfterEach();
const start = undo.start;

function repo(): Folder {
  const folder = gitRepo();
  undo.later(() => folder.remove());
  return folder;
}
function folder(): Folder {
  const made = plainFolder();
  undo.later(() => made.remove());
  return made;
}
/** A replay server that answers with a `write hello.txt` tool call, then with `text`. */
async function helloServer(text = 'I wrote hello.txt.'): Promise<RecordedStreamServer> {
  const server = await serveRecordedStream('openai-chat', [
    { kind: 'stream', chunks: chatToolCall('call_write_1', 'write', writeHello) },
    { kind: 'stream', chunks: chatText(text) },
  ]);
  undo.later(() => server.close());
  return server;
}

describe('turnloom run against an OpenAI-compatible server', () => {
  it('writes the file the model asked for, with a checkpoint, and sends the workspace tools in Chat wire format', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer();
    const result = await run(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'auto', '--json'], { cwd: workspace.path, env: openAiEnv(server.baseURL) });
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(0);
    const report = jsonOf(result);

    expect(report.status).toBe('completed');
    expect(report.text).toBe('I wrote hello.txt.');
    expect(readFileSync(join(workspace.path, 'hello.txt'), 'utf8')).toBe('hi from the model\n');
    expect(report.toolCalls).toEqual([expect.objectContaining({ name: 'write', input: writeHello, state: 'completed', error: null })]);
    expect(report.checkpoint).not.toBeNull();
    expect(report.checkpoint!.id).toBe(report.turnId);
    expect(report.checkpoint!.files).toEqual([{ path: 'hello.txt', status: 'added', additions: 1, deletions: 0 }]);
    // Mode ask: an edit asks; --approve auto answered it, and the provider acted on it.
    expect(report.approvals).toEqual([expect.objectContaining({ toolName: 'write', kind: 'edit', subject: 'hello.txt', state: 'consumed' })]);
    expect(report.usage.input).toBeGreaterThan(0);
    expect(result.stderr).not.toMatch(/no OPENAI_API_KEY/);

    // What the server received: two calls; the first offers the workspace's tools, as Chat Completions functions.
    const requests = bodies(server);
    expect(requests).toHaveLength(2);
    expect(server.requests[0]!.path).toMatch(/\/chat\/completions$/);
    const [first, second] = requests as [ChatRequestBody, ChatRequestBody];
    expect(first.model).toBe('gpt-test');
    expect(first.messages.at(-1)).toEqual({ role: 'user', content: 'make hello.txt' });
    const tools = first.tools ?? [];
    // The workspace's tools, and delegation to a sub-agent.
    expect(tools.map((tool) => tool.function.name).sort()).toEqual([...workspaceTools, 'task'].sort());
    for (const tool of tools) {
      expect(tool.type).toBe('function');
      expect(tool.function.parameters).toMatchObject({ type: 'object' });
      expect(typeof tool.function.description).toBe('string');
    }
    const write = tools.find((tool) => tool.function.name === 'write')!;
    expect(Object.keys((write.function.parameters as { properties: object }).properties).sort()).toEqual(['content', 'path']);
    // The second call carries the call and its result.
    expect(toolMessages(second)).toEqual([{ role: 'tool', tool_call_id: 'call_write_1', content: expect.stringContaining('hello.txt') }]);
    // After the turn, side work on the same provider and model: a title from the prompt, a summary from the diff (the server answers both with its last reply).
    const side = sideBodies(server);
    expect(side.map((body) => [body.model, body.messages.at(-1)!.content]).sort()).toEqual([
      ['gpt-test', expect.stringContaining('diff --git a/hello.txt b/hello.txt')],
      ['gpt-test', 'make hello.txt'],
    ]);
    expect(report.title).toBe('I wrote hello.txt');
    expect(report.checkpoint!.summary).toBe('I wrote hello.txt.');

    // Git: the new file is untracked, the user's index untouched, and the turn has a before and an after ref.
    expect(git(workspace.path, 'status', '--porcelain')).toBe('?? hello.txt\n');
    expect(git(workspace.path, 'diff', '--cached')).toBe('');
    const refs = git(workspace.path, 'for-each-ref', '--format=%(refname)', 'refs/turnloom').trim().split('\n');
    expect(refs).toHaveLength(2);
    expect(refs.some((ref) => ref.endsWith('/before'))).toBe(true);
    expect(refs.some((ref) => ref.endsWith('/after'))).toBe(true);
    for (const ref of refs) expect(ref).toContain(report.threadId);
  });

  it('asks on stdin; "n" with a note denies the write, and the model reads the note', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer('Understood, I left it alone.');
    const running = start(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'ask'], { cwd: workspace.path, env: openAiEnv(server.baseURL) });
    await running.waitFor('stdout', '? allow');
    expect(running.stdout()).toMatch(/\? allow (edit )?write hello\.txt/);
    running.write('n\n');
    await running.waitFor('stdout', 'why');
    running.write('not that file\n');
    const result = await running.exited;
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(0);

    expect(existsSync(join(workspace.path, 'hello.txt'))).toBe(false);
    expect(result.stdout).toMatch(/turn completed/);
    expect(result.stdout).toContain('Understood, I left it alone.');
    const requests = bodies(server);
    expect(requests, shown(result)).toHaveLength(2);
    const [result2] = toolMessages(requests[1]!);
    expect(result2).toMatchObject({ role: 'tool', tool_call_id: 'call_write_1' });
    expect(result2!.content).toContain('not that file');
    expect(git(workspace.path, 'status', '--porcelain')).toBe('');
  });

  it('"a" (always) allows the write, and the rule holds for the thread in the next run: no prompt then', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const data = folder();
    const firstServer = await helloServer();
    const first = start(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'ask', '--data', data.path, '--json'], {
      cwd: workspace.path,
      env: openAiEnv(firstServer.baseURL),
    });
    // With --json the prompts go to stderr: stdout holds JSON lines only, the question among them.
    await first.waitFor('stderr', '? allow');
    expect(first.stdout().trim().split('\n').map((line) => (JSON.parse(line) as { type: string }).type).at(-1)).toBe('approval.requested');
    first.write('a\n');
    const firstResult = await first.exited;
    expect(firstResult.code, shown(firstResult)).toBe(0);
    const firstReport = jsonOf(firstResult);
    expect(firstReport.status).toBe('completed');
    expect(readFileSync(join(workspace.path, 'hello.txt'), 'utf8')).toBe('hi from the model\n');
    expect(firstReport.approvals).toEqual([expect.objectContaining({ toolName: 'write', subject: 'hello.txt', state: 'consumed' })]);

    // Same thread, same data folder, a fresh server asking for the same write: the always-rule answers it.
    writeFileSync(join(workspace.path, 'hello.txt'), 'changed by the user\n');
    const secondServer = await helloServer('Wrote it again.');
    const second = start(['run', 'write hello.txt again', '--cwd', workspace.path, '--approve', 'ask', '--data', data.path, '--thread', firstReport.threadId], {
      cwd: workspace.path,
      env: openAiEnv(secondServer.baseURL),
    });
    // Input stays open, so nothing is denied by its end; should a prompt appear anyway, end the input so the run does not wait (the check below fails).
    second.waitFor('stdout', '? allow').then(() => second.endInput(), () => undefined);
    const secondResult = await second.exited;
    expect(secondResult.timedOut, shown(secondResult)).toBe(false);
    expect(secondResult.code, shown(secondResult)).toBe(0);
    expect(secondResult.stdout + secondResult.stderr).not.toMatch(/\? allow/);
    expect(secondResult.stdout).toContain(`thread ${firstReport.threadId}`);
    expect(readFileSync(join(workspace.path, 'hello.txt'), 'utf8')).toBe('hi from the model\n');
    // The second run's first request carries the first turn too: it continued the thread.
    const [secondFirst] = bodies(secondServer);
    expect(secondFirst!.messages.filter((message) => message.role === 'user').map((message) => message.content)).toEqual(['make hello.txt', 'write hello.txt again']);
  });

  it('--approve ask with input that ends denies the write ("no one answered"), and does not hang', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer('Nobody answered, so I did not write it.');
    const result = await run(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'ask'], { cwd: workspace.path, env: openAiEnv(server.baseURL), input: '' });
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(0);
    expect(result.stdout).toMatch(/✘ denied (edit )?write hello\.txt: no one answered/);
    expect(existsSync(join(workspace.path, 'hello.txt'))).toBe(false);
    const requests = bodies(server);
    expect(requests).toHaveLength(2);
    expect(toolMessages(requests[1]!)[0]!.content).toMatch(/nobody answered/);
  });

  it('without --approve and without a terminal, the policy is deny: the write is refused without a prompt', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer('Denied.');
    const running = start(['run', 'make hello.txt', '--cwd', workspace.path], { cwd: workspace.path, env: openAiEnv(server.baseURL) });
    // Input stays open: were it asking, it would wait.
    const result = await running.exited;
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(0);
    expect(result.stderr).toMatch(/approvals: deny/);
    expect(result.stdout).not.toMatch(/\? allow/);
    expect(result.stdout).toMatch(/✘ denied (edit )?write hello\.txt \(--approve deny\)/);
    expect(existsSync(join(workspace.path, 'hello.txt'))).toBe(false);
  });

  it('Ctrl-C while a prompt waits for an answer interrupts the turn: exit 130, nothing written', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer();
    const running = start(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'ask'], { cwd: workspace.path, env: openAiEnv(server.baseURL) });
    await running.waitFor('stdout', '? allow');
    const sentAt = Date.now();
    running.child.kill('SIGINT');
    const result = await running.exited;
    console.log(`Ctrl-C at a prompt to exit: ${Date.now() - sentAt} ms`);
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(130);
    expect(result.stdout).toMatch(/turn interrupted/);
    expect(existsSync(join(workspace.path, 'hello.txt'))).toBe(false);
    // The model was not called again after the interrupt.
    expect(server.requests).toHaveLength(1);
  });

  // Regression: answers that arrive together (`printf 'n\nwhy\n' | turnloom run …`) lost every line after the
  // first, when readline emitted them all at once and only a pending `question()` received one.
  it('answers piped in one go are all read: the note after "n" reaches the model', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer('Understood.');
    const result = await run(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'ask'], { cwd: workspace.path, env: openAiEnv(server.baseURL), input: 'n\nnot that file\n' });
    expect(result.code, shown(result)).toBe(0);
    expect(existsSync(join(workspace.path, 'hello.txt'))).toBe(false);
    const requests = bodies(server);
    expect(requests).toHaveLength(2);
    expect(toolMessages(requests[1]!)[0]!.content).toContain('not that file');
  });

  it('--mode read-only refuses the write without asking, and the model is told why', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const server = await helloServer('I cannot write in read-only mode.');
    const result = await run(['run', 'make hello.txt', '--cwd', workspace.path, '--approve', 'auto', '--mode', 'read-only', '--json'], {
      cwd: workspace.path,
      env: openAiEnv(server.baseURL),
    });
    expect(result.code, shown(result)).toBe(0);
    const report = jsonOf(result);
    expect(report.status).toBe('completed');
    expect(existsSync(join(workspace.path, 'hello.txt'))).toBe(false);
    // Nothing was asked: --approve auto would have allowed it, and it says so when it does.
    expect(report.approvals).toEqual([]);
    expect(result.stderr).not.toMatch(/allowed/);
    expect(report.toolCalls).toEqual([expect.objectContaining({ name: 'write' })]);
    expect(report.toolCalls[0]!.state).not.toBe('completed');
    const requests = bodies(server);
    expect(requests).toHaveLength(2);
    const [refusal] = toolMessages(requests[1]!);
    expect(refusal).toMatchObject({ role: 'tool', tool_call_id: 'call_write_1' });
    expect(refusal!.content).toMatch(/read-only/);
    expect(git(workspace.path, 'status', '--porcelain')).toBe('');
  });
});

describe('turnloom run with the scripted provider', () => {
  it('without any key, says so and runs the scripted turn to completion', { timeout: 60_000 }, async () => {
    const workspace = repo();
    const result = await run(['run', 'look around', '--approve', 'auto', '--json', '--cwd', workspace.path], { cwd: workspace.path });
    expect(result.code, shown(result)).toBe(0);
    expect(result.stderr).toMatch(/no OPENAI_API_KEY or ANTHROPIC_API_KEY/);
    const report = jsonOf(result);
    expect(report.status).toBe('completed');
    expect(report.text).toMatch(/scripted provider/);
    expect(report.text).toContain('look around');
  });

  it('outside a git repository, writes the file with no checkpoint, and says there are none', { timeout: 90_000 }, async () => {
    const scripts = folder();
    const script = join(scripts.path, 'write.json');
    writeFileSync(script, JSON.stringify({ steps: [[{ toolCall: { name: 'write', input: { path: 'a.txt', content: 'x' } } }], [{ text: 'done' }]] }));

    const plain = folder();
    const result = await run(['run', 'write a.txt', '--cwd', plain.path, '--script', script, '--approve', 'auto', '--json'], { cwd: plain.path });
    expect(result.code, shown(result)).toBe(0);
    const report = jsonOf(result);
    expect(report.status).toBe('completed');
    expect(report.text).toBe('done');
    expect(readFileSync(join(plain.path, 'a.txt'), 'utf8')).toBe('x');
    expect(report.checkpoint).toBeNull();
    expect(existsSync(join(plain.path, '.git'))).toBe(false);

    const other = folder();
    const shownRun = await run(['run', 'write a.txt', '--cwd', other.path, '--script', script, '--approve', 'auto'], { cwd: other.path });
    expect(shownRun.code, shown(shownRun)).toBe(0);
    expect(shownRun.stdout + shownRun.stderr).toMatch(/not a git repository/);
    expect(shownRun.stdout).toMatch(/turn completed/);
    expect(shownRun.stdout).not.toMatch(/checkpoint/);
    expect(readFileSync(join(other.path, 'a.txt'), 'utf8')).toBe('x');
  });

  it('Ctrl-C during a long bash command interrupts the turn: exit 130, and the command is gone', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const scripts = folder();
    const script = join(scripts.path, 'sleep.json');
    // Found by a unique argument: a command may see pids of its own namespace.
    const tag = uniqueTag();
    const sleeps = [`31.${tag}1`, `31.${tag}2`];
    const command = `sleep ${sleeps[0]} & sleep ${sleeps[1]}`;
    writeFileSync(script, JSON.stringify({ steps: [[{ toolCall: { name: 'bash', input: { command } } }], [{ text: 'slept' }]] }));

    const running = start(['run', 'sleep a while', '--cwd', workspace.path, '--script', script, '--mode', 'full'], { cwd: workspace.path });
    await running.waitFor('stdout', '▸ bash');
    const alive = () => sleeps.filter((argument) => processesWith(argument).length > 0);
    await expect.poll(alive, { timeout: 20_000 }).toEqual(sleeps);

    const sentAt = Date.now();
    running.child.kill('SIGINT');
    const result = await running.exited;
    const latencyMs = Date.now() - sentAt;
    console.log(`Ctrl-C to exit: ${latencyMs} ms`);
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(130);
    expect(latencyMs).toBeLessThan(10_000);
    expect(result.stdout).toMatch(/interrupting/);
    expect(result.stdout).toMatch(/turn interrupted/);
    expect(result.stdout).not.toContain('slept');
    await expect.poll(alive, { timeout: 5_000 }).toEqual([]);
  });
});

describe('turnloom run with a usage mistake', () => {
  /** One `turnloom: …` line on stderr, nothing on stdout, no stack, exit 2, no hang. */
  function expectUsageError(result: RunResult, says: RegExp): void {
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(2);
    const lines = result.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, shown(result)).toHaveLength(1);
    expect(lines[0]).toMatch(/^turnloom: \S/);
    expect(lines[0]).toMatch(says);
    expect(result.stderr).not.toMatch(/^\s*at /m);
    expect(result.stdout, shown(result)).toBe('');
  }

  const cases: Array<{ name: string; args: (workspace: string) => string[]; says: RegExp }> = [
    { name: 'no prompt', args: () => ['run'], says: /say what to do/ },
    { name: 'a blank prompt', args: () => ['run', '   '], says: /say what to do/ },
    { name: '--approve maybe', args: () => ['run', 'x', '--approve', 'maybe'], says: /--approve must be ask, auto or deny, not "maybe"/ },
    { name: '--mode sideways', args: () => ['run', 'x', '--mode', 'sideways'], says: /--mode must be one of .*read-only.*"sideways"/ },
    { name: '--thread with --continue', args: () => ['run', 'x', '--thread', 'X', '--continue'], says: /--continue .* or --thread ID, not both/ },
    { name: '--cwd that does not exist', args: () => ['run', 'x', '--cwd', '/nonexistent'], says: /--cwd \/nonexistent is not a folder/ },
    { name: '--provider that is not configured', args: () => ['run', 'x', '--provider', 'nope'], says: /no provider "nope"; the providers are scripted .*, anthropic .*, openai-chat .*, openai-responses/ },
    { name: '--provider openai (close to two names)', args: () => ['run', 'x', '--provider', 'openai'], says: /no provider "openai"; did you mean openai-chat or openai-responses\?/ },
    { name: '--provider of a known name without its key', args: () => ['run', 'x', '--provider', 'anthropic'], says: /provider "anthropic" is not configured: it needs ANTHROPIC_API_KEY/ },
    { name: 'an unknown option', args: () => ['run', 'x', '--bogus'], says: /unknown option --bogus/ },
    { name: '--script that does not exist', args: (workspace) => ['run', 'x', '--script', join(workspace, 'missing.json')], says: /--script .*no such file/ },
  ];
  for (const { name, args, says } of cases) {
    it(`${name}: one line, exit 2`, { timeout: 60_000 }, async () => {
      const workspace = repo();
      expectUsageError(await run(args(workspace.path), { cwd: workspace.path }), says);
    });
  }

  it('--thread that is not in --data: non-zero, one line naming the thread, nothing created', { timeout: 60_000 }, async () => {
    const workspace = repo();
    const data = folder();
    const result = await run(['run', 'x', '--cwd', workspace.path, '--data', data.path, '--thread', 'thr_missing', '--json'], { cwd: workspace.path });
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).not.toBe(0);
    expect(result.code, shown(result)).not.toBeNull();
    // A harness reading stdout is told too: one line, of type error.
    expect(result.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown), shown(result)).toEqual([{ type: 'error', code: 'not_found', message: expect.stringMatching(/^no thread thr_missing/) }]);
    expect(result.stderr).not.toMatch(/^\s*at /m);
    const errors = result.stderr.split('\n').filter((line) => line.includes('thr_missing'));
    expect(errors, shown(result)).toHaveLength(1);
    expect(errors[0]).toMatch(/^turnloom: no thread thr_missing/);
    // Besides the error, only the note that the scripted provider answers.
    const others = result.stderr.split('\n').filter((line) => line.trim() !== '' && !line.includes('thr_missing'));
    expect(others.every((line) => /no OPENAI_API_KEY/.test(line)), shown(result)).toBe(true);
    expect(git(workspace.path, 'for-each-ref', 'refs/turnloom')).toBe('');
  });
});
