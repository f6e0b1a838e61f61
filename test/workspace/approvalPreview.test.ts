import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PREVIEW_PATCH_CHARS, type ProviderMessage } from '../../domain/index.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

async function pendingApproval(w: WorkspaceFixture, threadId: string) {
  await expect.poll(async () => (await w.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
  return (await w.client.call('approval.list', { threadId })).approvals[0]!;
}

/** Starts a turn whose one call needs approval, and gives the preview it was asked with (the file untouched meanwhile). */
async function previewOf(w: WorkspaceFixture) {
  const { threadId } = await w.client.call('thread.create', {});
  await w.client.call('turn.start', { threadId, input: { text: 'change it' } });
  return { threadId, approval: await pendingApproval(w, threadId) };
}

describe('an approval shows what it allows, worked out before asking', () => {
  it('an edit carries the unified diff against the file as it is, and nothing is written before the answer', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'edit', input: { path: 'a.txt', oldText: 'first line', newText: 'better line' } }));
    const { approval } = await previewOf(ws);
    expect(approval.preview).toEqual({
      kind: 'diff',
      path: 'a.txt',
      patch: '--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-first line\n+better line',
      additions: 1,
      deletions: 1,
      created: false,
      cut: false,
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    expect(readFileSync(join(ws.repo.path, 'a.txt'), 'utf8')).toBe('first line\n');
  });

  it('a write of a new file shows it created; a huge one is cut with a note, its counts whole', async () => {
    const content = Array.from({ length: 5_000 }, (_, at) => `line ${at}`).join('\n');
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'src/new.txt', content } }));
    const { approval } = await previewOf(ws);
    const preview = approval.preview as Extract<typeof approval.preview, { kind: 'diff' }>;
    expect(preview).toMatchObject({ kind: 'diff', path: 'src/new.txt', created: true, cut: true, additions: 5_000, deletions: 0 });
    expect(preview.patch.startsWith('--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1,5000 @@\n+line 0\n')).toBe(true);
    expect(preview.patch.length).toBeLessThanOrEqual(MAX_PREVIEW_PATCH_CHARS + 100);
    expect(preview.patch).toMatch(/\n… \d+ more lines of the diff not shown$/);
  });

  it('an edit that cannot apply says why instead of a diff; a command shows itself and its folder', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'edit', input: { path: 'a.txt', oldText: 'not there', newText: 'x' } }));
    expect((await previewOf(ws)).approval.preview).toEqual({ kind: 'unavailable', reason: 'oldText not found in a.txt' });
    await ws.dispose();
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'npm test -- --watch=false' } }));
    expect((await previewOf(ws)).approval.preview).toEqual({ kind: 'command', command: 'npm test -- --watch=false', cwd: '.' });
  });

  it('a write into .git or outside the workspace previews the refusal, never the file it names', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: '../../etc/passwd', content: 'x' } }));
    const outside = (await previewOf(ws)).approval.preview;
    expect(outside).toEqual({ kind: 'unavailable', reason: 'path "../../etc/passwd" is outside the workspace' });
    await ws.dispose();
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: '.git/config', content: 'x' } }));
    const gitFolder = (await previewOf(ws)).approval.preview;
    expect(gitFolder).toMatchObject({ kind: 'unavailable' });
    expect((gitFolder as { reason: string }).reason).toContain(".git folder");
  });

  it.each([
    { tool: 'write', input: { path: 'a.txt', content: 'the model wrote this\n' }, created: false },
    { tool: 'edit', input: { path: 'a.txt', oldText: 'first', newText: 'model' }, created: false },
    { tool: 'write', input: { path: 'fresh.txt', content: 'the model wrote this\n' }, created: true },
  ])('a $tool approved after the person changed the file meanwhile is refused, and the person\'s edit stays (created: $created)', async ({ tool, input, created }) => {
    ws = await openWorkspaceFixture(toolSteps({ name: tool, input }));
    const { threadId, approval } = await previewOf(ws);
    expect(approval.preview).toMatchObject({ kind: 'diff', created, digest: created ? 'absent' : expect.stringMatching(/^sha256:/) });
    const file = join(ws.repo.path, input.path);
    const persons = 'first line, changed by the person\n';
    ws.repo.write(input.path, persons);
    await ws.client.call('approval.respond', { threadId, approvalId: approval.id, decision: 'once' });
    const turnId = approval.turnId;
    expect((await ws.settled(threadId, turnId)).state).toBe('completed');
    expect(readFileSync(file, 'utf8')).toBe(persons);
    const results = ws.requests.at(-1)!.messages.filter((message): message is Extract<ProviderMessage, { role: 'tool' }> => message.role === 'tool');
    expect(results.at(-1)).toMatchObject({ name: tool, isError: true });
    expect(results.at(-1)!.output).toBe(`${input.path} changed after the approval was asked (the diff shown is no longer what the call would do); read it again and redo the change`);
  });

  it.each([
    { what: 'a missing field', input: { path: 'a.txt', newText: 'b' }, error: 'invalid input for edit: oldText: expected string, received undefined' },
    { what: 'an unknown field', input: { path: 'a.txt', oldText: 'first', newText: 'b', force: true }, error: 'invalid input for edit: Unrecognized key: "force"' },
  ])('an edit with $what is refused before anybody is asked: the model reads why, and nothing changes', async ({ input, error }) => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'edit', input }));
    const { threadId } = await ws.client.call('thread.create', {});
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'change it' } });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.state).toBe('completed');
    expect(turn.approvals).toEqual([]);
    expect(readFileSync(join(ws.repo.path, 'a.txt'), 'utf8')).toBe('first line\n');
    const results = ws.requests.at(-1)!.messages.filter((message): message is Extract<ProviderMessage, { role: 'tool' }> => message.role === 'tool');
    expect(results.at(-1)).toMatchObject({ name: 'edit', isError: true });
    expect(results.at(-1)!.output).toContain(error);
  });
});
