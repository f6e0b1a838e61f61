import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ProviderRequest, ScriptedProvider } from '../../lib/providers.ts';
import { type Runtime, type ToolCallContext, openRuntime, tool } from '../../lib/index.ts';
import { processesWith, uniqueTag } from '../support/processes.ts';
import { gitRepo } from '../cli/runFixtures.ts';
import { resourcesBeyond, runProgram } from '../support/runProgram.ts';
import { tempDir } from '../support/tempDir.ts';

const answer = 'The first half of the answer, then the second half of it.';

/** What the turn's latest tool call gave, as the model reads it. */
const lastToolOutput = (request: ProviderRequest): string | undefined => request.messages.findLast((message) => message.role === 'tool')?.output;

/** Resolves once `holds` does, looking every 20 ms; fails after 10 s of it not holding. */
async function until(holds: () => boolean): Promise<void> {
  for (const started = Date.now(); !holds(); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() - started > 10_000) throw new Error(`still not so after 10 s: ${holds}`);
  }
}

/** A model that calls `name` with `input`, then answers with what the call gave. */
const callsThenQuotes = (name: string, input: Record<string, unknown>) =>
  new ScriptedProvider((request) => ({ steps: [[{ toolCall: { name, input } }], [{ text: `The tool said: ${lastToolOutput(request)}` }]] }));

describe('openRuntime and startTurn: the embedding API', () => {
  const dir = tempDir('turnloom-runtime-');
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });
  const open = async (...args: Parameters<typeof openRuntime>) => {
    const runtime = await openRuntime(...args);
    runtimes.push(runtime);
    return runtime;
  };

  it('streams the text as it is typed, and done resolves with the settled turn; the pieces add up to the answer', async () => {
    const runtime = await open({ providers: { scripted: new ScriptedProvider({ chunkSize: 5, delayMs: 5, steps: [[{ text: answer }]] }) } });
    const turn = await runtime.client.startTurn({ text: 'answer me' });
    const pieces: string[] = [];
    for await (const piece of turn.text()) pieces.push(piece);
    const settled = await turn.done;
    expect(settled).toMatchObject({ state: 'completed', text: answer, error: null, threadId: turn.threadId, turnId: turn.turnId });
    expect(pieces.join('')).toBe(answer);
    expect(pieces.length).toBeGreaterThan(1);
    expect(settled.usage.output).toBeGreaterThan(0);
  });

  it('a failed turn resolves done with its reason', async () => {
    const runtime = await open({ providers: { scripted: new ScriptedProvider({ steps: [[{ error: { kind: 'authentication', message: 'the key was refused', status: 401 } }]] }) } });
    const settled = await (await runtime.client.startTurn({ text: 'fail' })).done;
    expect(settled.state).toBe('failed');
    expect(settled.error).toMatch(/authentication: the key was refused/);
  });

  it('answers approvals through onApproval, in the workspace: an edit allowed, a command refused', async () => {
    const repo = gitRepo();
    try {
      const script = { steps: [[{ toolCall: { name: 'write', input: { path: 'notes.txt', content: 'hello\n' } } }, { toolCall: { name: 'bash', input: { command: 'touch ran.txt' } } }], [{ text: 'Done.' }]] };
      const runtime = await open({ workspace: repo.path, providers: { scripted: new ScriptedProvider(script) } });
      const asked: string[] = [];
      const turn = await runtime.client.startTurn({
        text: 'write and run',
        onApproval: (approval) => {
          asked.push(approval.kind);
          return approval.kind === 'command' ? 'deny' : 'approve';
        },
      });
      const settled = await turn.done;
      expect(settled.state).toBe('completed');
      expect(asked).toEqual(['edit', 'command']);
      expect(settled.turn.approvals.map((approval) => approval.state)).toEqual(['consumed', 'consumed']);
      const { readFileSync } = await import('node:fs');
      expect(readFileSync(join(repo.path, 'notes.txt'), 'utf8')).toBe('hello\n');
      expect(existsSync(join(repo.path, 'ran.txt'))).toBe(false);
    } finally {
      repo.remove();
    }
  });

  it('interrupt stops the turn; done resolves interrupted', async () => {
    const runtime = await open({ providers: { scripted: new ScriptedProvider({ chunkSize: 1, delayMs: 20, steps: [[{ text: answer.repeat(20) }]] }) } });
    const turn = await runtime.client.startTurn({ text: 'go on and on' });
    for await (const _piece of turn.text()) {
      await turn.interrupt('enough');
      break;
    }
    const settled = await turn.done;
    expect(settled.state).toBe('interrupted');
    expect(settled.error).toBe('enough');
  });

  it('a tool of the program’s own: the model’s call reaches execute with its parsed input and the turn’s context, and the answer uses its result', async () => {
    const calls: Array<{ input: unknown; context: Omit<ToolCallContext, 'signal'> }> = [];
    const weather = tool({
      name: 'weather',
      description: 'The weather in a city now.',
      parameters: z.object({ city: z.string(), unit: z.enum(['C', 'F']).default('C') }),
      kind: 'read',
      execute: ({ city, unit }, { signal: _, ...context }) => {
        calls.push({ input: { city, unit }, context });
        return { city, temperature: 21, unit };
      },
    });
    const runtime = await open({ tools: [weather], providers: { scripted: callsThenQuotes('weather', { city: 'Oslo' }) } });
    const settled = await (await runtime.client.startTurn({ text: 'How warm is it in Oslo?' })).done;
    expect(settled.state).toBe('completed');
    expect(settled.text).toBe('The tool said: {"city":"Oslo","temperature":21,"unit":"C"}');
    const part = settled.turn.messages[1].parts.find((each) => each.kind === 'tool')!;
    expect(calls).toEqual([{ input: { city: 'Oslo', unit: 'C' }, context: { threadId: settled.threadId, turnId: settled.turnId, callId: part.tool!.callId, workspace: null } }]);
    expect(settled.turn.approvals).toEqual([]);
  });

  it('a tool of unstated kind asks first in the default mode; a refusal means execute never runs, and the model reads why', async () => {
    let ran = 0;
    const deploy = tool({ name: 'deploy', description: 'Deploys the site.', parameters: z.object({ target: z.string() }), execute: () => ran++ });
    const runtime = await open({ tools: [deploy], providers: { scripted: callsThenQuotes('deploy', { target: 'production' }) } });
    const asked: string[] = [];
    const turn = await runtime.client.startTurn({ text: 'ship it', onApproval: (approval) => (asked.push(`${approval.kind} ${approval.subject}`), 'deny') });
    const settled = await turn.done;
    expect(asked).toEqual(['command deploy']);
    expect(ran).toBe(0);
    expect(settled.text).toMatch(/^The tool said: .*denied/i);
  });

  it('a thrown error is an error result the model reads, and the turn goes on', async () => {
    const flaky = tool({ name: 'flaky', description: 'Fails.', parameters: z.object({}), kind: 'read', execute: () => { throw new Error('the service is down'); } });
    const runtime = await open({ tools: [flaky], providers: { scripted: callsThenQuotes('flaky', {}) } });
    const settled = await (await runtime.client.startTurn({ text: 'try it' })).done;
    expect(settled.state).toBe('completed');
    expect(settled.text).toBe('The tool said: flaky failed: the service is down');
    expect(settled.turn.messages[1].parts.find((part) => part.kind === 'tool')?.state).toBe('error');
  });

  it('tools whose names clash are refused before anything opens, in words that say which', async () => {
    const repo = gitRepo();
    try {
      const grep = tool({ name: 'grep', description: 'Mine.', parameters: z.object({}), execute: () => '' });
      const data = join(dir.path, 'clash-data');
      await expect(openRuntime({ workspace: repo.path, data, tools: [grep] })).rejects.toThrow(/tools: "grep" is already the name of one of the worker's tools/);
      // The store it opened was closed again: another runtime opens the same folder.
      const again = await open({ data });
      expect(again.data).toBe(data);
    } finally {
      repo.remove();
    }
  });

  it('aborting startTurn’s signal interrupts the turn with its reason; done resolves interrupted and the text ends', async () => {
    const runtime = await open({ providers: { scripted: new ScriptedProvider({ chunkSize: 1, delayMs: 20, steps: [[{ text: answer.repeat(20) }]] }) } });
    const stop = new AbortController();
    const turn = await runtime.client.startTurn({ text: 'go on and on', signal: stop.signal });
    // Half a second into a stream of 20 s (the state is asserted, the time only reported).
    let abortedAt = 0;
    setTimeout(() => {
      abortedAt = performance.now();
      stop.abort('enough of that');
    }, 500);
    const settled = await turn.done;
    console.log(`aborted → settled ${settled.state} in ${Math.round(performance.now() - abortedAt)} ms`);
    expect(settled.state).toBe('interrupted');
    expect(settled.error).toBe('enough of that');
    expect(settled.text.length).toBeLessThan(answer.length * 20);
  });

  it('an already-aborted signal: startTurn rejects with its reason and starts nothing, not even a thread', async () => {
    const runtime = await open();
    const reason = new Error('the user left');
    await expect(runtime.client.startTurn({ text: 'hello', signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect((await runtime.client.call('thread.list', {})).threads).toEqual([]);
  });

  it('aborting while a command runs ends its process group and settles the turn interrupted; a tool of the program’s own sees its signal abort', async () => {
    const repo = gitRepo();
    const tag = uniqueTag();
    try {
      let sawAbort: unknown;
      const slow = tool({
        name: 'slow',
        description: 'Takes its time.',
        parameters: z.object({}),
        kind: 'read',
        execute: (_input, { signal }) => new Promise((resolve) => signal.addEventListener('abort', () => resolve((sawAbort = signal.reason, 'stopped')))),
      });
      // Each turn calls one tool: the first a command, the second the program's own.
      const script = (request: ProviderRequest) => ({
        steps: [[request.messages.some((message) => message.role === 'tool') ? { toolCall: { name: 'slow', input: {} } } : { toolCall: { name: 'bash', input: { command: `sleep 783.${tag}` } } }], [{ text: 'never said' }]],
      });
      const runtime = await open({ workspace: repo.path, tools: [slow], providers: { scripted: new ScriptedProvider(script) } });
      const stop = new AbortController();
      const first = await runtime.client.startTurn({ text: 'run it', mode: 'full', signal: stop.signal });
      for await (const view of first.changes()) if (view.messages[1].parts.some((part) => part.state === 'running.tool.executing')) break;
      await until(() => processesWith(`783.${tag}`).length > 0);
      stop.abort();
      const settled = await first.done;
      expect(settled.state).toBe('interrupted');
      expect(settled.error).toBe('aborted');
      await until(() => processesWith(`783.${tag}`).length === 0);

      const again = new AbortController();
      const second = await runtime.client.startTurn({ text: 'now the slow one', threadId: first.threadId, mode: 'full', signal: again.signal });
      for await (const view of second.changes()) if (view.messages[1].parts.some((part) => part.tool?.name === 'slow' && part.state === 'running.tool.executing')) break;
      again.abort('stop waiting');
      expect((await second.done).state).toBe('interrupted');
      expect(sawAbort).toBeDefined();
    } finally {
      repo.remove();
    }
  });

  it('startTurn passes agent and whileRunning through: a new thread runs as the agent; steered input joins the open turn', async () => {
    const runtime = await open({ providers: { scripted: new ScriptedProvider({ chunkSize: 1, delayMs: 20, steps: [[{ text: answer }]] }) } });
    const first = await runtime.client.startTurn({ text: 'look around', agent: 'plan' });
    const thread = await runtime.client.call('thread.get', { threadId: first.threadId });
    expect(thread.thread.agent).toBe('plan');
    expect(first.outcome.inbox).toBe('started');
    const steered = await runtime.client.startTurn({ text: 'and mind the tests', threadId: first.threadId, whileRunning: 'steer' });
    expect(steered.outcome).toMatchObject({ inbox: 'steered', turnId: first.turnId });
    steered.close();
    expect((await first.done).state).toBe('completed');
  });

  it('a program that opens a runtime, runs a turn and closes it holds nothing more than before it opened it', async () => {
    const program = join(dir.path, 'program.mts');
    writeFileSync(
      program,
      `import { openRuntime } from ${JSON.stringify(fileURLToPath(new URL('../../lib/index.ts', import.meta.url)))};
const before = process.getActiveResourcesInfo();
const runtime = await openRuntime();
const turn = await runtime.client.startTurn({ text: 'hello' });
for await (const _piece of turn.text());
await turn.done;
await runtime.close();
setImmediate(() => process.stdout.write(JSON.stringify({ before, after: process.getActiveResourcesInfo() }) + '\\n'));
`,
    );
    const { code, output } = await runProgram(program);
    expect(code).toBe(0);
    const { before, after } = JSON.parse(output.trim()) as { before: string[]; after: string[] };
    // Whatever the program held before it opened the runtime (the loader's reads among them), it holds no more of after closing it: no timer, socket or handle of ours.
    expect(resourcesBeyond(before, after).filter((resource) => resource !== 'TTYWrap' && resource !== 'PipeWrap')).toEqual([]);
  });
});
