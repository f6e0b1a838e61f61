import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoints, type CheckpointRef } from '../../adapters/git/index.ts';
import { chmodX, makeRepo, type TestRepo } from './gitRepoFixture.ts';

const lines = (count: number, tag: string) => Array.from({ length: count }, (_, index) => `${tag} line ${index}\n`).join('');

describe('Checkpoints.diff', () => {
  let made: TestRepo;
  let checkpoints: Checkpoints;
  let before: CheckpointRef;
  let after: CheckpointRef;

  beforeAll(async () => {
    made = makeRepo();
    made.write('modified.txt', lines(5, 'm'));
    made.write('deleted.txt', 'gone soon\n');
    made.write('old-name.txt', lines(20, 'r'));
    made.write('image.bin', Buffer.from([0, 1, 2, 3, 0, 255, 254]));
    made.write('tool.sh', 'echo hi\n');
    made.git('add', '-A');
    made.git('commit', '-qm', 'initial');
    checkpoints = (await Checkpoints.open(made.path))!;
    before = await checkpoints.capture('thread', 'turn', 'before');
    made.write('modified.txt', lines(5, 'm').replace('m line 2\n', 'changed\nadded\n'));
    rmSync(join(made.path, 'deleted.txt'));
    made.write('moved/new-name.txt', lines(20, 'r') + 'one more\n');
    rmSync(join(made.path, 'old-name.txt'));
    made.write('added.txt', 'new\nfile\n');
    made.write('image.bin', Buffer.from([0, 9, 9, 9, 0, 255]));
    made.write('tab\tand\nnewline.txt', 'odd name\n');
    made.write('star*.txt', 'literal\n');
    chmodX(made, 'tool.sh');
    after = await checkpoints.capture('thread', 'turn', 'after');
  });
  afterAll(() => made.remove());

  it('lists added, modified, deleted, renamed, binary and mode-only changes', async () => {
    const { files, truncated } = await checkpoints.diff(before.commit, after.commit);
    expect(truncated).toBe(false);
    expect(files).toEqual([
      { path: 'added.txt', status: 'added', additions: 2, deletions: 0, binary: false },
      { path: 'deleted.txt', status: 'deleted', additions: 0, deletions: 1, binary: false },
      { path: 'image.bin', status: 'modified', additions: 0, deletions: 0, binary: true },
      { path: 'modified.txt', status: 'modified', additions: 2, deletions: 1, binary: false },
      { path: 'moved/new-name.txt', oldPath: 'old-name.txt', status: 'renamed', additions: 1, deletions: 0, binary: false },
      { path: 'star*.txt', status: 'added', additions: 1, deletions: 0, binary: false },
      { path: 'tab\tand\nnewline.txt', status: 'added', additions: 1, deletions: 0, binary: false },
      { path: 'tool.sh', status: 'modified', additions: 0, deletions: 0, binary: false },
    ]);
  });

  it('gives a unified patch', async () => {
    const { patch } = await checkpoints.diff(before.commit, after.commit);
    expect(patch).toContain('diff --git a/modified.txt b/modified.txt\n');
    expect(patch).toContain('-m line 2\n+changed\n+added\n');
    expect(patch).toContain('rename from old-name.txt\nrename to moved/new-name.txt\n');
    expect(patch).toContain('Binary files a/image.bin and b/image.bin differ\n');
    expect(patch).toContain('old mode 100644\nnew mode 100755\n');
    expect(patch).toContain('deleted file mode 100644\n');
  });

  it('narrows to one path, taken literally', async () => {
    const one = await checkpoints.diff(before.commit, after.commit, { path: 'modified.txt' });
    expect(one.files.map(({ path }) => path)).toEqual(['modified.txt']);
    expect(one.patch.match(/^diff --git /gm)).toHaveLength(1);
    const star = await checkpoints.diff(before.commit, after.commit, { path: 'star*.txt' });
    expect(star.files.map(({ path }) => path)).toEqual(['star*.txt']);
    const folder = await checkpoints.diff(before.commit, after.commit, { path: 'moved' });
    expect(folder.files.map(({ path, status }) => [path, status])).toEqual([['moved/new-name.txt', 'added']]);
  });

  it('cuts the patch at maxChars and says how much is missing', async () => {
    const full = (await checkpoints.diff(before.commit, after.commit)).patch;
    const cut = await checkpoints.diff(before.commit, after.commit, { maxChars: 100 });
    expect(cut.truncated).toBe(true);
    expect(cut.patch.startsWith(full.slice(0, 100))).toBe(true);
    expect(cut.patch.slice(100)).toBe(`\n[... ${full.length - 100} characters of diff cut ...]\n`);
    expect(cut.files).toHaveLength(8);
    const exact = await checkpoints.diff(before.commit, after.commit, { maxChars: full.length });
    expect(exact).toMatchObject({ patch: full, truncated: false });
  });

  it('lists at most maxFiles, in path order, and totals every file', async () => {
    const whole = await checkpoints.diff(before.commit, after.commit);
    expect(whole).toMatchObject({ filesChanged: 8, additions: 7, deletions: 2, filesOmitted: 0 });
    const cut = await checkpoints.diff(before.commit, after.commit, { maxFiles: 3 });
    expect(cut.files).toEqual(whole.files.slice(0, 3));
    expect(cut).toMatchObject({ filesChanged: 8, additions: 7, deletions: 2, filesOmitted: 5, patch: whole.patch });
  });

  it('is empty between identical snapshots', async () => {
    expect(await checkpoints.diff(after.commit, after.commit)).toEqual({ files: [], filesChanged: 0, additions: 0, deletions: 0, filesOmitted: 0, patch: '', truncated: false });
  });

  it('refuses what is not a commit id', async () => {
    await expect(checkpoints.diff('--output=/tmp/x', after.commit)).rejects.toThrow(/"--output=\/tmp\/x" is not the id of a commit/);
    await expect(checkpoints.diff('HEAD', after.commit)).rejects.toThrow(/is not the id of a commit/);
    await expect(checkpoints.diff('0123456789abcdef0123456789abcdef01234567', after.commit)).rejects.toThrow(/is not the id of a commit/);
    const tree = made.git('rev-parse', `${after.commit}^{tree}`).trim();
    await expect(checkpoints.diff(tree, after.commit)).rejects.toThrow(/expected commit type, but the object dereferences to tree type/);
  });

  it('reports a clear error for a bad path', async () => {
    await expect(checkpoints.diff(before.commit, after.commit, { path: '../outside' })).rejects.toThrow(/^git diff failed in .*outside repository/);
  });
});
