import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../adapters/git/index.ts';
import { chmodX, makeRepo, treeFingerprint, userState, type TestRepo } from './gitRepoFixture.ts';

const repos: TestRepo[] = [];
afterEach(() => {
  for (const made of repos.splice(0)) made.remove();
});

/** Committed files, a staged change, an untracked file and an ignored file: the state a turn starts from. */
function startingRepo(): TestRepo {
  const made = makeRepo();
  repos.push(made);
  made.write('.gitignore', '*.log\n');
  made.write('edit.txt', 'original\n');
  made.write('remove.txt', 'keep me\n');
  made.write('script.sh', 'echo run\n');
  made.write('untouched.txt', 'same\n');
  made.write('shape', 'a file that becomes a folder\n');
  made.git('add', '-A');
  made.git('commit', '-qm', 'initial');
  made.write('untouched.txt', 'same, staged\n');
  made.git('add', 'untouched.txt');
  made.write('notes.md', 'untracked\n');
  made.write('debug.log', 'ignored before\n');
  return made;
}

/** What an agent turn might do to the work tree. */
function turn(made: TestRepo): void {
  made.write('edit.txt', 'rewritten\n');
  rmSync(join(made.path, 'remove.txt'));
  made.write('added.txt', 'new\n');
  made.write('new/nested/deep.txt', 'nested\n');
  chmodX(made, 'script.sh');
  rmSync(join(made.path, 'shape'));
  made.write('shape/inside.txt', 'now a folder\n');
  made.write('notes.md', 'untracked, edited\n');
  made.write('debug.log', 'ignored, edited during the turn\n');
}

/** The turn's checkpoints around `change`, as the worker takes them. */
async function turnAround(checkpoints: Checkpoints, turnId: string, change: () => void): Promise<{ turnId: string; before: string; after: string }> {
  const before = await checkpoints.capture('thread', turnId, 'before');
  change();
  const after = await checkpoints.capture('thread', turnId, 'after');
  return { turnId, before: before.commit, after: after.commit };
}

const saveAs = (id: string) => ({ threadId: 'thread', id });

describe('Checkpoints.undo', () => {
  it('puts back exactly what the turn changed, byte for byte, and saves the tree it found first', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const start = userState(made);
    const reverted = await turnAround(checkpoints, 'turn', () => turn(made));
    const afterTurn = userState(made);
    const untouchedMtime = statSync(join(made.path, 'untouched.txt')).mtimeMs;

    const { changes, saved } = await checkpoints.undo([reverted], { saveAs: saveAs('revert-1'), force: false });

    expect(changes).toMatchObject({ filesChanged: 8, additions: 4, deletions: 5, filesOmitted: 0 });
    expect(changes.files).toEqual([
      { path: 'added.txt', status: 'deleted', additions: 0, deletions: 1, binary: false },
      { path: 'edit.txt', status: 'modified', additions: 1, deletions: 1, binary: false },
      { path: 'new/nested/deep.txt', status: 'deleted', additions: 0, deletions: 1, binary: false },
      { path: 'notes.md', status: 'modified', additions: 1, deletions: 1, binary: false },
      { path: 'remove.txt', status: 'added', additions: 1, deletions: 0, binary: false },
      { path: 'script.sh', status: 'modified', additions: 0, deletions: 0, binary: false },
      { path: 'shape', status: 'added', additions: 1, deletions: 0, binary: false },
      { path: 'shape/inside.txt', status: 'deleted', additions: 0, deletions: 1, binary: false },
    ]);
    const restored = userState(made);
    // Ignored files are not part of a snapshot: the turn's edit to one stays.
    expect(made.read('debug.log')).toBe('ignored, edited during the turn\n');
    expect(restored.tree).toEqual({ ...(start.tree as object), 'debug.log': (afterTurn.tree as Record<string, string>)['debug.log'] });
    expect(existsSync(join(made.path, 'new'))).toBe(false);
    expect(statSync(join(made.path, 'script.sh')).mode & 0o111).toBe(0);
    // Files the turn did not change are not rewritten.
    expect(statSync(join(made.path, 'untouched.txt')).mtimeMs).toBe(untouchedMtime);
    for (const key of ['index', 'cached', 'head', 'symbolicHead', 'branches', 'stash', 'gitDir'] as const) expect(restored[key]).toEqual(start[key]);
    // The tree it found is kept under a hidden ref of its own: nothing a revert overwrites is lost.
    expect(saved.ref).toBe('refs/turnloom/checkpoints/thread/revert-1/reverted');
    expect(made.git('rev-parse', saved.ref).trim()).toBe(saved.commit);
    expect(made.git('show', `${saved.commit}:edit.txt`)).toBe('rewritten\n');
  });

  it('keeps what a person did since: a file the turn never touched, edited or created after it, stays as it is', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const reverted = await turnAround(checkpoints, 'turn', () => made.write('turn.txt', 'from the turn\n'));
    made.write('edit.txt', 'a person edited this later\n');
    made.write('later.txt', 'a person wrote this later\n');

    const { changes } = await checkpoints.undo([reverted], { saveAs: saveAs('revert-1'), force: false });

    expect(changes.files.map((file) => [file.path, file.status])).toEqual([['turn.txt', 'deleted']]);
    expect(existsSync(join(made.path, 'turn.txt'))).toBe(false);
    expect(made.read('edit.txt')).toBe('a person edited this later\n');
    expect(made.read('later.txt')).toBe('a person wrote this later\n');
  });

  it('refuses, changing nothing, when a file the turn changed was changed again since, and names it; with force it reverts, and the saved tree keeps that change', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const reverted = await turnAround(checkpoints, 'turn', () => {
      made.write('edit.txt', 'the turn wrote this\n');
      made.write('turn.txt', 'from the turn\n');
    });
    made.write('edit.txt', 'and then a person wrote this\n');
    const before = userState(made);

    const refusal = await checkpoints.undo([reverted], { saveAs: saveAs('revert-1'), force: false }).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'conflict', details: { files: ['edit.txt'], conflicts: 1 } });
    expect((refusal as Error).message).toMatch(/edit\.txt was changed after the turn that last changed it: nothing was reverted/);
    expect(userState(made)).toEqual(before);
    expect(made.git('for-each-ref', 'refs/turnloom/checkpoints/thread/revert-1')).toBe('');

    const { saved } = await checkpoints.undo([reverted], { saveAs: saveAs('revert-2'), force: true });
    expect(made.read('edit.txt')).toBe('original\n');
    expect(existsSync(join(made.path, 'turn.txt'))).toBe(false);
    expect(made.git('show', `${saved.commit}:edit.txt`)).toBe('and then a person wrote this\n');
  });

  it('undoes several turns at once: each file goes back to how the first of them that changed it found it', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const first = await turnAround(checkpoints, 't1', () => made.write('edit.txt', 'first turn\n'));
    // Between the turns a person writes a file the second turn then changes.
    made.write('between.txt', 'a person, between the turns\n');
    const second = await turnAround(checkpoints, 't2', () => {
      made.write('edit.txt', 'second turn\n');
      made.write('between.txt', 'the second turn changed it\n');
    });

    await checkpoints.undo([first, second], { saveAs: saveAs('revert-1'), force: false });

    expect(made.read('edit.txt')).toBe('original\n');
    expect(made.read('between.txt')).toBe('a person, between the turns\n');
  });

  it('changes nothing and reports nothing when the turns changed nothing', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const reverted = await turnAround(checkpoints, 'turn', () => undefined);
    const start = userState(made);
    const { changes } = await checkpoints.undo([reverted], { saveAs: saveAs('revert-1'), force: false });
    expect(changes).toEqual({ files: [], filesChanged: 0, additions: 0, deletions: 0, filesOmitted: 0 });
    expect(userState(made)).toEqual(start);
  });

  it('undoes a turn in a repository with no commits', async () => {
    const made = makeRepo();
    repos.push(made);
    made.write('a.txt', 'a\n');
    const checkpoints = (await Checkpoints.open(made.path))!;
    const reverted = await turnAround(checkpoints, 'turn', () => {
      made.write('a.txt', 'changed\n');
      made.write('b/c.txt', 'c\n');
    });
    await checkpoints.undo([reverted], { saveAs: saveAs('revert-1'), force: false });
    expect(treeFingerprint(made.path)).toEqual({ 'a.txt': expect.stringMatching(/^- /) });
    expect(made.read('a.txt')).toBe('a\n');
    expect(existsSync(join(made.path, '.git', 'index'))).toBe(false);
  });

  it('refuses what is not a commit id, before touching anything', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const start = userState(made);
    const options = { saveAs: saveAs('revert-1'), force: false };
    await expect(checkpoints.undo([{ turnId: 't', before: 'HEAD~1', after: 'HEAD' }], options)).rejects.toThrow(/is not the id of a commit/);
    await expect(checkpoints.undo([{ turnId: 't', before: 'ffffffffffffffffffffffffffffffffffffffff', after: 'ffffffffffffffffffffffffffffffffffffffff' }], options)).rejects.toThrow(/is not the id of a commit/);
    expect(userState(made)).toEqual(start);
  });
});
