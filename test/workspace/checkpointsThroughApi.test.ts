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

  it('a revert undoes only what the turn changed: a person’s later edits and new files stay; a file changed since is a conflict that changes nothing, unless forced', async () => {
    ws = await openWorkspaceFixture(byPrompt({ one: toolSteps({ name: 'write', input: { path: 'turn.txt', content: 'from the turn\n' } }, { name: 'write', input: { path: 'shared.txt', content: 'the turn wrote this\n' } }) }));
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'one' } });
    expect((await ws.settled(threadId, turnId)).state).toBe('completed');
    // Afterwards, a person works on: a file the turn never touched, a new one, and one the turn wrote.
    ws.repo.write('a.txt', 'a person edited this later\n');
    ws.repo.write('notes.txt', 'a person wrote this later\n');
    ws.repo.write('shared.txt', 'then a person changed it\n');

    const refused = await ws.client.call('checkpoint.revert', { threadId, checkpointId: turnId }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'conflict', details: { files: ['shared.txt'] } });
    expect(readFileSync(join(ws.repo.path, 'turn.txt'), 'utf8')).toBe('from the turn\n');
    let { thread } = await ws.client.call('thread.get', { threadId });
    // The log says what happened: the revert began and was refused, and the thread is free again.
    expect(thread.revert).toBeNull();
    expect(thread.turns[turnId]!.revertedAt).toBeNull();
    const events = (await ws.client.call('thread.events', { threadId, after: 0 })).events.map((stored) => stored.event);
    expect(events.filter((event) => event.type.startsWith('checkpoint.revert')).map((event) => event.type)).toEqual(['checkpoint.revertStarted', 'checkpoint.revertFailed']);
    expect(events.find((event) => event.type === 'checkpoint.revertFailed')).toMatchObject({ conflicts: ['shared.txt'] });

    const forced = await ws.client.call('checkpoint.revert', { threadId, checkpointId: turnId, force: true });
    expect(forced.files.map((file) => [file.path, file.status]).sort()).toEqual([
      ['shared.txt', 'deleted'],
      ['turn.txt', 'deleted'],
    ]);
    expect(readFileSync(join(ws.repo.path, 'a.txt'), 'utf8')).toBe('a person edited this later\n');
    expect(readFileSync(join(ws.repo.path, 'notes.txt'), 'utf8')).toBe('a person wrote this later\n');
    expect(existsSync(join(ws.repo.path, 'shared.txt'))).toBe(false);
    // Nothing is lost: the person's change is in the tree saved before the revert.
    expect(ws.repo.git('show', `${forced.saved.commit}:shared.txt`)).toBe('then a person changed it\n');
    ({ thread } = await ws.client.call('thread.get', { threadId }));
    expect(thread.reverts.at(-1)!.saved).toEqual(forced.saved);
  });

  it('holds the thread from the check to the record: a turn started while a revert runs waits for it, and runs on the files it left', async () => {
    ws = await openWorkspaceFixture(
      byPrompt({ one: toolSteps({ name: 'write', input: { path: 'turn.txt', content: 'from turn one\n' } }), two: toolSteps({ name: 'write', input: { path: 'two.txt', content: 'from turn two\n' } }) }),
    );
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const first = (await ws.client.call('turn.start', { threadId, input: { text: 'one' } })).turnId;
    expect((await ws.settled(threadId, first)).state).toBe('completed');
    // Many files make the revert take a while: the new turn arrives while it runs.
    for (let index = 0; index < 300; index++) ws.repo.write(`bulk/${index}.txt`, `${index}\n`);
    ws.repo.git('add', '-A');
    ws.repo.git('commit', '-qm', 'bulk');
    const reverting = ws.client.call('checkpoint.revert', { threadId, checkpointId: first });
    await expect.poll(async () => (await ws!.client.call('thread.get', { threadId })).thread.revert, { timeout: 10_000, interval: 5 }).not.toBeNull();
    const start = await ws.client.call('turn.start', { threadId, input: { text: 'two' } });
    expect(start.inbox).toBe('queued');
    await reverting;
    expect((await ws.settled(threadId, start.turnId)).state).toBe('completed');

    expect(existsSync(join(ws.repo.path, 'turn.txt'))).toBe(false);
    expect(readFileSync(join(ws.repo.path, 'two.txt'), 'utf8')).toBe('from turn two\n');
    const types = (await ws.client.call('thread.events', { threadId, after: 0 })).events.map((stored) => stored.event).filter((event) => event.type.startsWith('checkpoint.revert') || (event.type === 'turn.requested' && event.turnId === start.turnId)).map((event) => event.type);
    expect(types).toEqual(['checkpoint.revertStarted', 'checkpoint.reverted', 'turn.requested']);
  });

  it('says which files the turn wrote that git ignores: no checkpoint holds them, and a revert leaves them as they are', async () => {
    ws = await openWorkspaceFixture(byPrompt({ one: toolSteps({ name: 'write', input: { path: '.env', content: 'SECRET=turn\n' } }, { name: 'write', input: { path: 'app.txt', content: 'app\n' } }) }));
    ws.repo.write('.gitignore', '.env\n');
    ws.repo.git('add', '.gitignore');
    ws.repo.git('commit', '-qm', 'ignore .env');
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'one' } });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.checkpoint!.uncaptured).toEqual(['.env']);
    expect(turn.checkpoint!.diff!.files.map((file) => file.path)).toEqual(['app.txt']);
    await ws.client.call('checkpoint.revert', { threadId, checkpointId: turnId });
    expect(existsSync(join(ws.repo.path, 'app.txt'))).toBe(false);
    expect(readFileSync(join(ws.repo.path, '.env'), 'utf8')).toBe('SECRET=turn\n');
  });
});
