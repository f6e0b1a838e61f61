import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderMessage } from '../../domain/index.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

const toolResults = (messages: ProviderMessage[]) => messages.filter((message): message is Extract<ProviderMessage, { role: 'tool' }> => message.role === 'tool');

async function pendingApproval(w: WorkspaceFixture, threadId: string) {
  await expect.poll(async () => (await w.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
  return (await w.client.call('approval.list', { threadId })).approvals[0]!;
}

describe('permission modes and rules, on a real workspace', () => {
  it('`always` records a rule in the log, and the same call runs without asking from then on', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'echo hi' } }, { name: 'bash', input: { command: 'echo hi' } }));
    const { threadId } = await ws.client.call('thread.create', {});
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'say hi twice' } });
    const approval = await pendingApproval(ws, threadId);
    expect(approval).toMatchObject({ toolName: 'bash', kind: 'command', subject: 'echo hi' });
    await ws.client.call('approval.respond', { threadId, approvalId: approval.id, decision: 'always' });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.state).toBe('completed');
    // One approval for two identical calls: the second ran on the rule.
    expect(turn.approvals).toHaveLength(1);
    expect(turn.messages[1].parts.filter((part) => part.kind === 'tool').map((part) => [part.state, part.tool!.output])).toEqual([
      ['completed', 'hi\nexit code 0'],
      ['completed', 'hi\nexit code 0'],
    ]);
    const { thread } = await ws.client.call('thread.get', { threadId });
    expect(thread.permissions).toEqual({ mode: 'ask', rules: [{ tool: 'bash', pattern: 'echo hi', decision: 'allow', match: 'exact' }] });
    const events = (await ws.client.call('thread.events', { threadId, after: 0 })).events.map((stored) => stored.event);
    expect(events).toContainEqual({ type: 'permission.ruleAdded', rule: { tool: 'bash', pattern: 'echo hi', decision: 'allow', match: 'exact' }, by: 'local', approvalId: approval.id });
  });

  it('a denial with a note reaches the model as the tool result, and the command never runs', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'touch ran.txt' } }));
    const { threadId } = await ws.client.call('thread.create', {});
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'touch it' } });
    const approval = await pendingApproval(ws, threadId);
    await ws.client.call('approval.respond', { threadId, approvalId: approval.id, decision: 'deny', note: 'use the staging database instead' });
    expect((await ws.settled(threadId, turnId)).state).toBe('completed');
    expect(existsSync(join(ws.repo.path, 'ran.txt'))).toBe(false);
    const [result] = toolResults(ws.requests.at(-1)!.messages);
    expect(result).toMatchObject({ name: 'bash', isError: true });
    expect(result!.output).toContain('use the staging database instead');
  });

  it('read-only refuses writes and commands without asking, and says why; reads still run', async () => {
    ws = await openWorkspaceFixture(
      toolSteps({ name: 'read', input: { path: 'a.txt' } }, { name: 'write', input: { path: 'b.txt', content: 'no' } }, { name: 'bash', input: { command: 'touch c.txt' } }),
    );
    const { threadId } = await ws.client.call('thread.create', { mode: 'read-only' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'try everything' } });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.approvals).toEqual([]);
    expect(turn.messages[1].parts.map((part) => part.state)).toEqual(['completed', 'error', 'error', 'completed']);
    expect(existsSync(join(ws.repo.path, 'b.txt')) || existsSync(join(ws.repo.path, 'c.txt'))).toBe(false);
    const results = toolResults(ws.requests.at(-1)!.messages);
    expect(results[0]!.output).toContain('first line');
    expect(results[1]!.output).toContain('read-only');
    expect(results[2]!.output).toContain('read-only');
  });

  it('a run may be stricter than its thread: turn.start with mode read-only', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'b.txt', content: 'no' } }));
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'write' }, mode: 'read-only' });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.mode).toBe('read-only');
    expect(turn.messages[1].parts[0]!.state).toBe('error');
    expect(existsSync(join(ws.repo.path, 'b.txt'))).toBe(false);
  });

  it('thread.configure rules: an allowed pattern runs, a denied one is refused, anything else asks', async () => {
    ws = await openWorkspaceFixture(
      toolSteps({ name: 'bash', input: { command: 'echo allowed' } }, { name: 'bash', input: { command: 'rm -f a.txt' } }, { name: 'bash', input: { command: 'date' } }),
    );
    const { threadId } = await ws.client.call('thread.create', {});
    await ws.client.call('thread.configure', {
      threadId,
      rules: [
        { tool: 'bash', pattern: 'echo *', decision: 'allow' },
        { tool: '*', pattern: 'rm *', decision: 'deny' },
      ],
    });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'go' } });
    const approval = await pendingApproval(ws, threadId);
    expect(approval.subject).toBe('date');
    await ws.client.call('approval.respond', { threadId, approvalId: approval.id, decision: 'once' });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.messages[1].parts.filter((part) => part.kind === 'tool').map((part) => part.state)).toEqual(['completed', 'error', 'completed']);
    expect(turn.messages[1].parts[1]!.error).toContain('a rule of this thread denies this call');
    expect(existsSync(join(ws.repo.path, 'a.txt'))).toBe(true);
    // A configuration that says nothing is refused, and changes nothing.
    await expect(ws.client.call('thread.configure', { threadId })).rejects.toMatchObject({ code: 'invalid_payload' });
  });
});
