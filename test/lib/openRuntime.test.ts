import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../lib/providers.ts';
import { type Runtime, openRuntime } from '../../lib/index.ts';
import { gitRepo } from '../cli/runFixtures.ts';
import { resourcesBeyond, runProgram } from '../support/runProgram.ts';
import { tempDir } from '../support/tempDir.ts';

const answer = 'The first half of the answer, then the second half of it.';

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
      const { existsSync, readFileSync } = await import('node:fs');
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
