import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('an interrupt kills the work', () => {
  it('stops a turn running `sleep 30` promptly: its whole process group dies, and every tool call has a result', async () => {
    // The command leaves a grandchild behind it and records every pid, so the test can look for survivors.
    const command = 'sleep 30 & echo $! > pids.txt; echo $$ >> pids.txt; sleep 30';
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command } }, { name: 'read', input: { path: 'a.txt' } }));
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'wait' } });
    const pidsFile = join(ws.repo.path, 'pids.txt');
    await expect.poll(() => existsSync(pidsFile) && readFileSync(pidsFile, 'utf8').trim().split('\n').length === 2, { timeout: 15_000 }).toBe(true);
    const pids = readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
    expect(pids.every(alive)).toBe(true);

    const asked = performance.now();
    await ws.client.call('turn.interrupt', { threadId, reason: 'enough' });
    let turn = await ws.turn(threadId, turnId);
    while (turn.state !== 'interrupted') {
      await new Promise((resolve) => setTimeout(resolve, 5));
      turn = await ws.turn(threadId, turnId);
    }
    const settledMs = performance.now() - asked;
    console.log(`interrupt of a running bash tool: turn settled ${settledMs.toFixed(0)} ms after turn.interrupt (target 500 ms)`);
    expect(settledMs).toBeLessThan(10_000);

    expect(turn.interrupt).toEqual({ reason: 'enough', cause: 'provider' });
    const [tool] = turn.messages[1].parts;
    // The tool was cut off: marked interrupted, with a result that says so for the model to read.
    expect(tool!.state).toBe('interrupted');
    expect(tool!.tool!.outcome).not.toBeNull();
    expect(tool!.tool!.output).toBeTruthy();
    expect(turn.messages[1].parts).toHaveLength(1);
    // Reaping orphans is the init process's job and takes a moment here: poll, generously.
    await expect.poll(() => pids.filter(alive), { timeout: 15_000 }).toEqual([]);
  });
});
