import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { runEmbedded } from '../../cli/run/embeddedRun.ts';
import { workspaceSetup } from '../../cli/workspaceSetup.ts';
import { tempDir } from '../support/tempDir.ts';

/** A terminal as readline sees one: a person typing, and a screen. */
function terminal() {
  const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => input });
  const screen = Object.assign(new PassThrough(), { isTTY: true, columns: 120 });
  let shown = '';
  screen.on('data', (chunk: Buffer) => (shown += chunk.toString('utf8')));
  return { input, screen, shown: () => shown };
}

describe('turnloom run in a terminal: typing while the turn runs', () => {
  const dirs = [tempDir('turnloom-run-steer-data-'), tempDir('turnloom-run-steer-ws-')];
  afterEach(() => dirs.forEach((dir) => dir.remove()));

  it('steers a typed line into the running turn, and runs a /queue line as the next turn', async () => {
    const [data, workspace] = dirs as [ReturnType<typeof tempDir>, ReturnType<typeof tempDir>];
    const tty = terminal();
    const slow = new ScriptedProvider({ chunkSize: 4, delayMs: 15, steps: [[{ text: 'Reading the code and thinking about the race, slowly. '.repeat(3) }]] });
    const run = runEmbedded({
      prompt: 'fix the race',
      workspace: await workspaceSetup('run', '--cwd', workspace.path, data.path),
      dataDir: data.path,
      threadId: null,
      providers: { scripted: slow },
      provider: { name: 'scripted', model: null },
      policy: 'deny',
      mode: undefined,
      view: { out: tty.screen, tty: true },
      input: tty.input,
      prompts: tty.screen,
    });
    await expect.poll(() => tty.shown(), { timeout: 20_000 }).toContain('Reading the code');
    tty.input.write('and check the logs too\r');
    tty.input.write('/queue then tidy up\r');
    const report = await run;

    // What was typed is shown on a line of its own, never glued onto the model's text.
    expect(tty.shown()).toMatch(/\n[\r ]*› and check the logs too\n/);
    expect(tty.shown()).toContain('↳ steered into this turn: and check the logs too');
    expect(tty.shown()).toContain('⧗ queued: then tidy up (runs after this turn)');
    expect(report.status).toBe('completed');
    const store = LmdbStore.open(data.path);
    try {
      const view = store.readView(report.threadId)!;
      const [first, second] = view.turnIds.map((id) => view.turns[id]!);
      expect(first!.messages[0].parts.map((part) => part.text)).toEqual(['fix the race', 'and check the logs too']);
      expect(first!.steps).toHaveLength(2);
      expect([second!.id, second!.messages[0].parts[0]!.text, second!.state]).toEqual([report.turnId, 'then tidy up', 'completed']);
    } finally {
      await store.close();
    }
  });
});
