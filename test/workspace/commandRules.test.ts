import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalView } from '../../domain/index.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

async function nextApproval(w: WorkspaceFixture, threadId: string, turnId: string, seen: number): Promise<ApprovalView> {
  await expect.poll(async () => (await w.turn(threadId, turnId)).approvals.length, { timeout: 15_000 }).toBe(seen + 1);
  return (await w.turn(threadId, turnId)).approvals[seen]!;
}

/** The malicious model chains a command it may not run behind one a rule allows. */
describe.each(['ask', 'auto-edits'] as const)('a model smuggling a command past the rules, in %s mode', (mode) => {
  it('`git status; touch X` under the rule `git status*` is asked about, and does not run when denied', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'git status; touch X.txt' } }, { name: 'bash', input: { command: 'git status && touch X2.txt' } }));
    const { threadId } = await ws.client.call('thread.create', { mode, rules: [{ tool: 'bash', pattern: 'git status*', decision: 'allow' }] });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'look' } });
    for (const [seen, command] of ['git status; touch X.txt', 'git status && touch X2.txt'].entries()) {
      const approval = await nextApproval(ws, threadId, turnId, seen);
      expect(approval).toMatchObject({ toolName: 'bash', subject: command, state: 'pending' });
      await ws.client.call('approval.respond', { threadId, approvalId: approval.id, decision: 'deny' });
    }
    expect((await ws.settled(threadId, turnId)).state).toBe('completed');
    expect(existsSync(join(ws.repo.path, 'X.txt')) || existsSync(join(ws.repo.path, 'X2.txt'))).toBe(false);
  });

  it('`always` to `ls *` records that exact command: `ls ; touch Y` is asked about afterwards', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'ls *' } }, { name: 'bash', input: { command: 'ls *' } }, { name: 'bash', input: { command: 'ls ; touch Y.txt' } }));
    const { threadId } = await ws.client.call('thread.create', { mode });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'list' } });
    const first = await nextApproval(ws, threadId, turnId, 0);
    await ws.client.call('approval.respond', { threadId, approvalId: first.id, decision: 'always' });
    // The same command runs on the recorded rule; the smuggled one asks.
    const smuggled = await nextApproval(ws, threadId, turnId, 1);
    expect(smuggled).toMatchObject({ subject: 'ls ; touch Y.txt', state: 'pending' });
    await ws.client.call('approval.respond', { threadId, approvalId: smuggled.id, decision: 'deny' });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.messages[1].parts.filter((part) => part.kind === 'tool').map((part) => part.state)).toEqual(['completed', 'completed', 'error']);
    expect(existsSync(join(ws.repo.path, 'Y.txt'))).toBe(false);
    const { thread } = await ws.client.call('thread.get', { threadId });
    expect(thread.permissions.rules).toEqual([{ tool: 'bash', pattern: 'ls *', decision: 'allow', match: 'exact' }]);
  });
});

describe('`always` on an edit, in ask mode', () => {
  it('records the exact path: a `*` in it matches no other file', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'a*.txt', content: 'star' } }, { name: 'write', input: { path: 'ab.txt', content: 'other' } }));
    const { threadId } = await ws.client.call('thread.create', { mode: 'ask' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'write' } });
    const first = await nextApproval(ws, threadId, turnId, 0);
    expect(first.subject).toBe('a*.txt');
    await ws.client.call('approval.respond', { threadId, approvalId: first.id, decision: 'always' });
    const second = await nextApproval(ws, threadId, turnId, 1);
    expect(second.subject).toBe('ab.txt');
    await ws.client.call('approval.respond', { threadId, approvalId: second.id, decision: 'deny' });
    await ws.settled(threadId, turnId);
    expect(existsSync(join(ws.repo.path, 'a*.txt'))).toBe(true);
    expect(existsSync(join(ws.repo.path, 'ab.txt'))).toBe(false);
  });
});
