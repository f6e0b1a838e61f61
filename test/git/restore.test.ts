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

describe('Checkpoints.restore', () => {
  it('brings the work tree back byte for byte and reports what it changed', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const start = userState(made);
    const before = await checkpoints.capture('thread', 'turn', 'before');
    turn(made);
    const afterTurn = userState(made);
    const after = await checkpoints.capture('thread', 'turn', 'after');
    const untouchedMtime = statSync(join(made.path, 'untouched.txt')).mtimeMs;

    const changes = await checkpoints.restore(before.commit);

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
    // Files that already matched the snapshot are not rewritten.
    expect(statSync(join(made.path, 'untouched.txt')).mtimeMs).toBe(untouchedMtime);
    for (const key of ['index', 'cached', 'head', 'symbolicHead', 'branches', 'stash', 'gitDir'] as const) expect(restored[key]).toEqual(start[key]);

    // And forward again: redo the turn from its after snapshot.
    await checkpoints.restore(after.commit);
    expect(treeFingerprint(made.path)).toEqual(afterTurn.tree);
    expect(statSync(join(made.path, 'script.sh')).mode & 0o111).not.toBe(0);
    expect(userState(made).index).toEqual(start.index);
  });

  it('changes nothing and reports nothing when the work tree already matches', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    const start = userState(made);
    expect(await checkpoints.restore(before.commit)).toEqual({ files: [], filesChanged: 0, additions: 0, deletions: 0, filesOmitted: 0 });
    expect(userState(made)).toEqual(start);
  });

  it('restores into a repository with no commits', async () => {
    const made = makeRepo();
    repos.push(made);
    made.write('a.txt', 'a\n');
    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    made.write('a.txt', 'changed\n');
    made.write('b/c.txt', 'c\n');
    await checkpoints.restore(before.commit);
    expect(treeFingerprint(made.path)).toEqual({ 'a.txt': expect.stringMatching(/^- /) });
    expect(made.read('a.txt')).toBe('a\n');
    expect(existsSync(join(made.path, '.git', 'index'))).toBe(false);
  });

  it('refuses what is not a commit id, before touching anything', async () => {
    const made = startingRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const start = userState(made);
    await expect(checkpoints.restore('HEAD~1')).rejects.toThrow(/is not the id of a commit/);
    await expect(checkpoints.restore('ffffffffffffffffffffffffffffffffffffffff')).rejects.toThrow(/is not the id of a commit/);
    expect(userState(made)).toEqual(start);
  });
});
