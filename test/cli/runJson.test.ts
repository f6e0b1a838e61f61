import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Folder, gitRepo, plainFolder, undoneAfterEach } from './runFixtures.ts';

type Line = { type: string; arrivedAt: number } & Record<string, unknown>;

const undo = undoneAfterEach();

function folder(made: Folder): Folder {
  undo.later(() => made.remove());
  return made;
}

/** Slow enough that a reader sees the words well before the end: ~1.6 s of typing, then a write that needs approval. */
const modelText = `Looking at the workspace first, then writing the file you asked for. \u001b[31mred\u001b[0m ${'and more words, '.repeat(8)}done.`;
const script = {
  chunkSize: 4,
  delayMs: 30,
  steps: [
    [{ reasoning: 'The user wants a file.' }, { text: modelText }, { toolCall: { name: 'write', input: { path: 'hello.txt', content: 'hi\n' } } }],
    [{ text: 'Wrote hello.txt.' }],
  ],
};

describe('turnloom run --json', () => {
  it('streams JSON Lines while the turn runs: deltas coalesced, the approval asked and answered, the summary last', { timeout: 90_000 }, async () => {
    const workspace = folder(gitRepo());
    const data = folder(plainFolder('turnloom-run-json-data-'));
    const scriptFile = join(data.path, 'script.json');
    writeFileSync(scriptFile, JSON.stringify(script));
    const running = undo.start(['run', 'make hello.txt', '--cwd', workspace.path, '--data', join(data.path, 'threads'), '--script', scriptFile, '--mode', 'ask', '--approve', 'auto', '--json'], {
      cwd: workspace.path,
    });
    // Each line with the moment it reached us, read as the process writes it.
    const lines: Line[] = [];
    let partial = '';
    running.child.stdout!.on('data', (chunk: Buffer) => {
      const arrivedAt = performance.now();
      const [last, ...complete] = (partial + chunk.toString('utf8')).split('\n').reverse();
      partial = last!;
      for (const text of complete.reverse()) lines.push({ ...(JSON.parse(text) as { type: string }), arrivedAt });
    });
    const result = await running.exited;
    const said = `code ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    expect(result.code, said).toBe(0);
    expect(partial, said).toBe('');

    // Only JSON on stdout, every line with a type; the notes went to stderr.
    expect(result.stdout.trim().split('\n').length, said).toBe(lines.length);
    expect(lines.every((line) => typeof line.type === 'string'), said).toBe(true);
    expect(result.stderr).toContain('✔ allowed write hello.txt (--approve auto)');
    // No raw control character reaches stdout: the model's ESC is escaped, and reads back exactly.
    expect(result.stdout).not.toContain('\u001b');

    const types = lines.map((line) => line.type);
    expect(types[0]).toBe('thread.started');
    expect(types.at(-1)).toBe('summary');
    const order = ['thread.started', 'turn.started', 'step.started', 'reasoning.delta', 'text.delta', 'approval.requested', 'approval.answered', 'tool.started', 'tool.finished', 'step.finished', 'usage', 'turn.settled', 'summary'];
    const firsts = order.map((type) => types.indexOf(type));
    expect(firsts, types.join(' ')).toEqual([...firsts].sort((a, b) => a - b));
    expect(firsts, types.join(' ')).not.toContain(-1);

    // The words arrive as they are typed, in pieces a reader can follow, not one line a token, and add up to the text.
    const deltas = lines.filter((line) => line.type === 'text.delta' && line.step === 1);
    expect(deltas.map((line) => line.text).join('')).toBe(modelText);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.length).toBeLessThan(modelText.length / script.chunkSize / 2);
    const settled = lines.find((line) => line.type === 'turn.settled')!;
    expect(settled.arrivedAt - deltas[0]!.arrivedAt, 'the first words came well before the end').toBeGreaterThan(800);

    const requested = lines.find((line) => line.type === 'approval.requested')!;
    expect(requested).toMatchObject({ toolName: 'write', subject: expect.stringContaining('hello.txt'), threadId: lines[0]!.threadId });
    expect(lines.find((line) => line.type === 'approval.answered')).toMatchObject({ approvalId: requested.approvalId, decision: 'approved' });
    expect(lines.find((line) => line.type === 'tool.finished')).toMatchObject({ name: 'write', state: 'completed', truncated: false });
    expect(settled).toMatchObject({ state: 'completed', text: `${modelText}\n\nWrote hello.txt.` });

    // The summary keeps what `--json` printed before it streamed.
    expect(lines.at(-1)).toMatchObject({
      threadId: lines[0]!.threadId,
      turnId: settled.turnId,
      status: 'completed',
      text: settled.text,
      toolCalls: [expect.objectContaining({ name: 'write', state: 'completed' })],
      approvals: [expect.objectContaining({ toolName: 'write', state: expect.any(String) })],
      usage: expect.objectContaining({ input: expect.any(Number) }),
    });
  });
});
