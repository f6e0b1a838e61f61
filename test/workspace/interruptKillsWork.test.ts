import { afterEach, describe, expect, it } from 'vitest';
import { processesWith, uniqueTag } from '../support/processes.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

describe('an interrupt kills the work', () => {
  it('stops a turn running `sleep 30` promptly: its whole process group dies, and every tool call has a result', async () => {
    // The command leaves a grandchild behind it; both are found by a unique argument (a command may see pids of its own namespace).
    const tag = uniqueTag();
    const sleeps = [`30.${tag}1`, `30.${tag}2`];
    const command = `sleep ${sleeps[0]} & sleep ${sleeps[1]}`;
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command } }, { name: 'read', input: { path: 'a.txt' } }));
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'wait' } });
    const running = () => sleeps.filter((argument) => processesWith(argument).length > 0);
    await expect.poll(running, { timeout: 15_000 }).toEqual(sleeps);

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
    await expect.poll(running, { timeout: 15_000 }).toEqual([]);
  });
});
