import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { PermissionMode } from '../../domain/index.ts';
import { processesWith, uniqueTag } from '../support/processes.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

/** Runs the turn, approving every call it asks about (as `once`), until it settles. */
async function runApproving(w: WorkspaceFixture, mode: PermissionMode, rules: unknown[] = []) {
  const { threadId } = await w.client.call('thread.create', { mode, rules } as never);
  const { turnId } = await w.client.call('turn.start', { threadId, input: { text: 'go' } });
  for (;;) {
    const turn = await w.turn(threadId, turnId);
    if (['completed', 'failed', 'interrupted'].includes(turn.state)) return { threadId, turnId, turn };
    for (const approval of turn.approvals.filter((candidate) => candidate.state === 'pending')) {
      await w.client.call('approval.respond', { threadId, approvalId: approval.id, decision: 'once' });
    }
    await sleep(25);
  }
}

/** The malicious model leaves work behind that would write to the workspace after the turn. */
describe.each(['full', 'ask', 'auto-edits'] as const)('background work a model starts, in %s mode', (mode) => {
  it('ends with its call, or with its turn when kept (before the `after` checkpoint): nothing writes once the turn is over', async () => {
    const tag = uniqueTag();
    const kept = `(sleep 3; echo late > kept-late.txt) & sleep 778.${tag} > /dev/null 2>&1 &`;
    ws = await openWorkspaceFixture(
      toolSteps({ name: 'bash', input: { command: `(sleep 3; echo late > late.txt) & sleep 777.${tag} &` } }, { name: 'bash', input: { command: kept, keepRunning: true } }),
    );
    // A rule allowing the very command does not make a kept call run without asking.
    const { threadId, turnId, turn } = await runApproving(ws, mode, [{ tool: 'bash', pattern: kept, decision: 'allow', match: 'exact' }]);
    expect(turn.state).toBe('completed');
    expect(turn.approvals.some((approval) => approval.subject === kept)).toBe(mode !== 'full');
    expect(processesWith(`777.${tag}`)).toEqual([]);
    expect(processesWith(`778.${tag}`)).toEqual([]);
    await sleep(3_500);
    expect(existsSync(join(ws.repo.path, 'late.txt')) || existsSync(join(ws.repo.path, 'kept-late.txt'))).toBe(false);
    const { checkpoints } = await ws.client.call('checkpoint.list', { threadId });
    expect(checkpoints.map((checkpoint) => checkpoint.checkpointId)).toEqual([turnId]);
  });
});

describe('a kept process', () => {
  it('runs on while its turn goes on, and what it writes then is in the turn’s checkpoint', async () => {
    const tag = uniqueTag();
    ws = await openWorkspaceFixture(
      toolSteps(
        { name: 'bash', input: { command: `(sleep 1; echo served > served.txt) & sleep 779.${tag} > /dev/null 2>&1 &`, keepRunning: true } },
        { name: 'bash', input: { command: 'sleep 2; cat served.txt' } },
      ),
    );
    const { threadId, turnId, turn } = await runApproving(ws, 'full');
    expect(turn.messages[1].parts.filter((part) => part.kind === 'tool').map((part) => part.tool!.output)).toEqual(['exit code 0', 'served\nexit code 0']);
    expect(processesWith(`779.${tag}`)).toEqual([]);
    const diff = await ws.client.call('checkpoint.diff', { threadId, checkpointId: turnId });
    expect(diff.files.map((file) => file.path)).toEqual(['served.txt']);
  });

  it('ends when its turn is interrupted', async () => {
    const tag = uniqueTag();
    ws = await openWorkspaceFixture(
      toolSteps({ name: 'bash', input: { command: `sleep 780.${tag} > /dev/null 2>&1 &`, keepRunning: true } }, { name: 'bash', input: { command: `sleep 781.${tag}` } }),
    );
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'serve' } });
    await expect.poll(() => processesWith(`781.${tag}`).length, { timeout: 15_000 }).toBe(1);
    expect(processesWith(`780.${tag}`)).toHaveLength(1);
    await ws.client.call('turn.interrupt', { threadId, reason: 'enough' });
    expect((await ws.settled(threadId, turnId)).state).toBe('interrupted');
    await expect.poll(() => [...processesWith(`780.${tag}`), ...processesWith(`781.${tag}`)], { timeout: 5_000 }).toEqual([]);
  });
});
