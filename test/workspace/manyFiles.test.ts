import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { TurnView } from '../../domain/index.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

const FILES = 16_000;

/** What `npm install` does to a work tree, in one command: 160 packages of 100 one-line files, in an untracked folder. */
const install = `${JSON.stringify(process.execPath)} -e ${JSON.stringify(
  `const fs = require('fs'); for (let p = 0; p < ${FILES / 100}; p++) { fs.mkdirSync('node_modules/p' + p, { recursive: true }); for (let f = 0; f < 100; f++) fs.writeFileSync('node_modules/p' + p + '/f' + f + '.js', 'module.exports = ' + f + ';\\n'); }`,
)}`;

/** The turn, however it ends; a turn still open after this long is stuck (the fix is for it to end, not to end fast). */
async function settledWithin(fixture: WorkspaceFixture, threadId: string, turnId: string, ms: number): Promise<TurnView> {
  let turn: TurnView | undefined;
  await expect
    .poll(
      async () => {
        turn = await fixture.turn(threadId, turnId);
        return ['completed', 'failed', 'interrupted'].includes(turn.state) ? 'settled' : turn.state;
      },
      { timeout: ms, interval: 100 },
    )
    .toBe('settled');
  return turn!;
}

async function installTurn(natsUrl?: string) {
  ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: install } }), natsUrl ? { natsUrl } : {});
  const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
  const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'npm install' } });
  const turn = await settledWithin(ws, threadId, turnId, 40_000);
  return { threadId, turnId, turn };
}

describe('a turn that changes 16,000 files', () => {
  it('completes; its checkpoint lists the first files, says how many it left out, and totals them all; side work and a revert still work', { timeout: 90_000 }, async () => {
    const { threadId, turnId, turn } = await installTurn();
    expect(turn.state, turn.error ?? '').toBe('completed');
    expect(readdirSync(join(ws!.repo.path, 'node_modules'))).toHaveLength(FILES / 100);

    const diff = turn.checkpoint!.diff!;
    expect(diff.filesChanged).toBe(FILES);
    expect(diff.additions).toBe(FILES);
    expect(diff.deletions).toBe(0);
    expect(diff.files.length).toBeGreaterThan(0);
    expect(diff.files.length + diff.filesOmitted).toBe(FILES);
    expect(diff.filesOmitted).toBeGreaterThan(0);
    expect(diff.files[0]).toEqual({ path: 'node_modules/p0/f0.js', status: 'added', additions: 1, deletions: 0, binary: false });
    expect(diff.truncated).toBe(true);

    const { checkpoints } = await ws!.client.call('checkpoint.list', { threadId });
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]).toMatchObject({ checkpointId: turnId, filesChanged: FILES, filesOmitted: diff.filesOmitted, additions: FILES, deletions: 0 });
    expect(checkpoints[0]!.files).toEqual(diff.files);
    const served = await ws!.client.call('checkpoint.diff', { threadId, checkpointId: turnId });
    expect(served).toMatchObject({ filesChanged: FILES, filesOmitted: diff.filesOmitted, truncated: true });

    // Side work ran on the cut list, without crashing the worker: the summary is recorded.
    await expect.poll(async () => (await ws!.turn(threadId, turnId)).summary, { timeout: 10_000 }).not.toBeNull();

    // Undone: every file goes, and the log says how many went, whatever the list shows.
    const reverted = await ws!.client.call('checkpoint.revert', { threadId, checkpointId: turnId });
    expect(reverted.diagnostics).toBe(0);
    expect(existsSync(join(ws!.repo.path, 'node_modules'))).toBe(false);
    const { thread } = await ws!.client.call('thread.get', { threadId });
    expect(thread.reverts).toHaveLength(1);
    expect(thread.reverts[0]).toMatchObject({ filesChanged: FILES, deletions: FILES, additions: 0 });
    expect(thread.reverts[0]!.files.length + thread.reverts[0]!.filesOmitted).toBe(FILES);
  });

  it('completes over NATS too: the checkpoint event fits in one message', { timeout: 90_000 }, async () => {
    const { turn } = await installTurn(inject('natsUrl'));
    expect(turn.state, turn.error ?? '').toBe('completed');
    expect(turn.checkpoint!.diff).toMatchObject({ filesChanged: FILES, additions: FILES });
  });
});
