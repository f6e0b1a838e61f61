import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

/** Each turn's script, by the text the user sent. */
const byPrompt = (scripts: Record<string, ReturnType<typeof toolSteps>>) => (request: Parameters<ReturnType<typeof toolSteps>>[0]) => {
  const users = request.messages.filter((message) => message.role === 'user');
  const text = (users.at(-1) as { text: string }).text;
  return scripts[text]!(request);
};

describe('checkpoints of a real repository, through the API', () => {
  it('captures each changing turn, diffs it from the log, and reverts it byte for byte; the model stops seeing undone turns', async () => {
    ws = await openWorkspaceFixture(
      byPrompt({
        one: toolSteps({ name: 'write', input: { path: 'b.txt', content: 'made by turn one\n' } }, { name: 'edit', input: { path: 'a.txt', oldText: 'first line', newText: 'edited line' } }),
        two: toolSteps({ name: 'bash', input: { command: 'rm a.txt && mkdir -p new && printf "\\0binary" > new/c.bin' } }),
        three: toolSteps(),
        four: toolSteps(),
      }),
    );
    // The user's own staged change must survive everything.
    ws.repo.write('staged.txt', 'staged by the user\n');
    ws.repo.git('add', 'staged.txt');
    const cached = ws.repo.git('diff', '--cached');
    const head = ws.repo.git('rev-parse', 'HEAD');

    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const run = async (text: string) => {
      const { turnId } = await ws!.client.call('turn.start', { threadId, input: { text } });
      expect((await ws!.settled(threadId, turnId)).state).toBe('completed');
      return turnId;
    };
    const one = await run('one');
    const two = await run('two');
    const three = await run('three'); // reads nothing, changes nothing: no checkpoint

    const { checkpoints, off } = await ws.client.call('checkpoint.list', { threadId });
    expect(off).toBeNull();
    expect(checkpoints.map((checkpoint) => checkpoint.checkpointId)).toEqual([one, two]);
    expect(checkpoints[0]!.before!.ref).toBe(`refs/turnloom/checkpoints/${threadId}/${one}/before`);
    expect(ws.repo.git('for-each-ref', '--format=%(refname)', `refs/turnloom/checkpoints/${threadId}`).trim().split('\n')).toHaveLength(4);

    const diff = await ws.client.call('checkpoint.diff', { threadId, checkpointId: one });
    expect(diff.files.map((file) => [file.path, file.status])).toEqual([
      ['a.txt', 'modified'],
      ['b.txt', 'added'],
    ]);
    expect(diff.patch).toContain('-first line\n+edited line');
    const onlyA = await ws.client.call('checkpoint.diff', { threadId, checkpointId: one, path: 'a.txt' });
    expect(onlyA.files).toHaveLength(1);
    expect(onlyA.patch).toContain('a/a.txt');
    expect(onlyA.patch).not.toContain('b.txt');
    const twoDiff = await ws.client.call('checkpoint.diff', { threadId, checkpointId: two });
    expect(twoDiff.files.map((file) => [file.path, file.status, file.binary])).toEqual([
      ['a.txt', 'deleted', false],
      ['new/c.bin', 'added', true],
    ]);

    // Undo turn one: the files go back to before it, and turn two (later) is undone with it.
    const reverted = await ws.client.call('checkpoint.revert', { threadId, checkpointId: one });
    expect(reverted.diagnostics).toBe(0);
    expect(readFileSync(join(ws.repo.path, 'a.txt'), 'utf8')).toBe('first line\n');
    expect(existsSync(join(ws.repo.path, 'b.txt'))).toBe(false);
    expect(existsSync(join(ws.repo.path, 'new'))).toBe(false);
    expect(readFileSync(join(ws.repo.path, 'staged.txt'), 'utf8')).toBe('staged by the user\n');
    expect(ws.repo.git('diff', '--cached')).toBe(cached);
    expect(ws.repo.git('rev-parse', 'HEAD')).toBe(head);

    const { thread } = await ws.client.call('thread.get', { threadId });
    expect([one, two, three].map((turnId) => thread.turns[turnId]!.revertedAt !== null)).toEqual([true, true, true]);
    expect(thread.reverts).toHaveLength(1);
    expect(thread.reverts[0]!.files.map((file) => file.path).sort()).toEqual(['a.txt', 'b.txt', 'new/c.bin']);
    // Undone twice is refused, and so is a turn that changed nothing.
    await expect(ws.client.call('checkpoint.revert', { threadId, checkpointId: one })).rejects.toMatchObject({ code: 'conflict' });

    // The next model call sees only what still stands.
    await run('four');
    expect(ws.requests.at(-1)!.messages.filter((message) => message.role === 'user')).toEqual([{ role: 'user', text: 'four' }]);
  });

  it('refuses to revert while a turn is open, and changes nothing', async () => {
    ws = await openWorkspaceFixture(
      byPrompt({
        one: toolSteps({ name: 'write', input: { path: 'b.txt', content: 'x' } }),
        slow: toolSteps({ name: 'bash', input: { command: 'sleep 20' } }),
      }),
    );
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId: one } = await ws.client.call('turn.start', { threadId, input: { text: 'one' } });
    await ws.settled(threadId, one);
    const { turnId: slow } = await ws.client.call('turn.start', { threadId, input: { text: 'slow' } });
    await expect.poll(async () => (await ws!.turn(threadId, slow)).state, { timeout: 15_000 }).toBe('running.runningTools');
    await expect(ws.client.call('checkpoint.revert', { threadId, checkpointId: one })).rejects.toMatchObject({ code: 'conflict' });
    expect(existsSync(join(ws.repo.path, 'b.txt'))).toBe(true);
    await ws.client.call('turn.interrupt', { threadId });
    await ws.settled(threadId, slow);
  });

  it('a folder that is not a repository runs without checkpoints, and says so once', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'b.txt', content: 'x' } }), { git: false });
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    for (const text of ['one', 'two']) {
      const { turnId } = await ws.client.call('turn.start', { threadId, input: { text } });
      expect((await ws.settled(threadId, turnId)).state).toBe('completed');
    }
    expect(existsSync(join(ws.repo.path, 'b.txt'))).toBe(true);
    const { checkpoints, off } = await ws.client.call('checkpoint.list', { threadId });
    expect(checkpoints).toEqual([]);
    expect(off).toContain('is not a git repository');
    const events = (await ws.client.call('thread.events', { threadId, after: 0 })).events;
    expect(events.filter((stored) => stored.event.type === 'checkpoint.unavailable')).toHaveLength(1);
  });
});
