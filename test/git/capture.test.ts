import { mkdirSync, writeFileSync, existsSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../adapters/git/index.ts';
import { makeRepo, userState, type TestRepo } from './gitRepoFixture.ts';

const repos: TestRepo[] = [];
const repo = (init = true) => {
  const made = makeRepo(init);
  repos.push(made);
  return made;
};
afterEach(() => {
  for (const made of repos.splice(0)) made.remove();
});

const snapshotFiles = (made: TestRepo, commit: string) => made.git('ls-tree', '-r', '--name-only', commit).split('\n').filter(Boolean).sort();

/** Committed a/b/c, a stash entry, a second branch, then staged + unstaged + untracked + ignored + deleted changes. */
function busyRepo(): TestRepo {
  const made = repo();
  made.write('.gitignore', 'ignored.log\nbuild/\n');
  made.write('a.txt', 'a1\n');
  made.write('b.txt', 'b1\n');
  made.write('c.txt', 'c1\n');
  made.git('add', '-A');
  made.git('commit', '-qm', 'initial');
  made.git('branch', 'feature');
  made.write('c.txt', 'stashed\n');
  made.git('stash', '-q');
  made.write('a.txt', 'a2 staged\n');
  made.git('add', 'a.txt');
  made.write('a.txt', 'a3 unstaged\n');
  made.write('c.txt', 'c2 staged only\n');
  made.git('add', 'c.txt');
  unlinkSync(join(made.path, 'b.txt'));
  made.write('untracked/u.txt', 'u\n');
  made.write('ignored.log', 'secret\n');
  made.write('build/out.js', 'built\n');
  return made;
}

describe('Checkpoints.capture', () => {
  it("leaves the user's index, HEAD, branches, stash and work tree as they were", async () => {
    const made = busyRepo();
    const before = userState(made);
    const checkpoints = (await Checkpoints.open(made.path))!;
    await checkpoints.capture('thread', 'turn', 'before');
    await checkpoints.capture('thread', 'turn', 'after');
    expect(userState(made)).toEqual(before);
    // The staged-vs-unstaged distinction survives, not just the bytes of the index file.
    expect(made.git('diff', '--cached', '--name-status')).toBe('M\ta.txt\nM\tc.txt\n');
  });

  it('snapshots the work tree: untracked files in, ignored files out, deleted tracked files absent', async () => {
    const made = busyRepo();
    const checkpoints = (await Checkpoints.open(made.path))!;
    const ref = await checkpoints.capture('thread', 'turn', 'before');
    expect(snapshotFiles(made, ref.commit)).toEqual(['.gitignore', 'a.txt', 'c.txt', 'untracked/u.txt']);
    // Work-tree content, not the staged version.
    expect(made.git('show', `${ref.commit}:a.txt`)).toBe('a3 unstaged\n');
    expect(made.git('rev-parse', ref.ref).trim()).toBe(ref.commit);
    expect(made.git('rev-parse', `${ref.commit}^`)).toBe(made.git('rev-parse', 'HEAD'));
    expect(made.git('log', '-1', '--format=%an <%ae>|%cn|%s', ref.commit).trim()).toBe('turnloom <turnloom@localhost>|turnloom|turnloom checkpoint "thread" "turn" before');
    expect(ref).toMatchObject({ threadId: 'thread', turnId: 'turn', which: 'before', ref: 'refs/turnloom/checkpoints/thread/turn/before' });
  });

  it('captures a repository with no commits, and without any configured identity', async () => {
    const made = repo(false);
    made.git('init', '-q');
    // Refuse to guess an identity: only the checkpoint's own author/committer variables can satisfy commit-tree.
    made.git('config', 'user.useConfigOnly', 'true');
    made.write('first.txt', 'hello\n');
    made.write('dir/second.txt', 'world\n');
    const emptyConfig = join(made.path, '.git', 'empty-global-config');
    writeFileSync(emptyConfig, '');
    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = userState(made);
    const previous = { global: process.env.GIT_CONFIG_GLOBAL, nosystem: process.env.GIT_CONFIG_NOSYSTEM };
    process.env.GIT_CONFIG_GLOBAL = emptyConfig;
    process.env.GIT_CONFIG_NOSYSTEM = '1';
    try {
      const ref = await checkpoints.capture('t', 'u', 'before');
      expect(snapshotFiles(made, ref.commit)).toEqual(['dir/second.txt', 'first.txt']);
      expect(made.git('rev-list', '--parents', '-n', '1', ref.commit).trim()).toBe(ref.commit);
    } finally {
      for (const [name, value] of [['GIT_CONFIG_GLOBAL', previous.global], ['GIT_CONFIG_NOSYSTEM', previous.nosystem]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(userState(made)).toEqual(before);
    expect(existsSync(join(made.path, '.git', 'index'))).toBe(false);
  });

  it("captures a linked worktree from its own index and files, leaving the main checkout's alone", async () => {
    const made = busyRepo();
    const linked = `${made.path}-linked`;
    made.git('worktree', 'add', '-q', linked, 'feature');
    try {
      writeFileSync(join(linked, 'only-in-worktree.txt'), 'w\n');
      const mainBefore = userState(made);
      const checkpoints = (await Checkpoints.open(linked))!;
      expect(checkpoints.root).toBe(linked);
      const ref = await checkpoints.capture('thread', 'turn', 'before');
      expect(snapshotFiles(made, ref.commit)).toEqual(['.gitignore', 'a.txt', 'b.txt', 'c.txt', 'only-in-worktree.txt']);
      expect(userState(made)).toEqual(mainBefore);
      expect(made.git('-C', linked, 'status', '--porcelain')).toBe('?? only-in-worktree.txt\n');
    } finally {
      made.git('worktree', 'remove', '--force', linked);
    }
  });
});

describe('Checkpoints.open', () => {
  it('is null outside a work tree and for a folder that does not exist', async () => {
    const plain = repo(false);
    expect(await Checkpoints.open(plain.path)).toBeNull();
    expect(await Checkpoints.open(join(plain.path, 'missing'))).toBeNull();
  });

  it('finds the top level from a subdirectory', async () => {
    const made = repo();
    mkdirSync(join(made.path, 'deep', 'er'), { recursive: true });
    const checkpoints = await Checkpoints.open(join(made.path, 'deep', 'er'));
    expect(checkpoints?.root).toBe(made.path);
  });

  it('takes the location the caller found (git asked once), and one found for another folder is asked again', async () => {
    const made = repo();
    const other = repo();
    mkdirSync(join(made.path, 'sub'));
    const location = (await Checkpoints.locate(join(made.path, 'sub')))!;
    expect(location).toMatchObject({ dir: join(made.path, 'sub'), root: made.path, indexPath: join(made.path, '.git', 'index') });
    // Told it is in no repository, it does not look: the caller's answer stands.
    expect(await Checkpoints.open(made.path, { location: null })).toBeNull();
    expect((await Checkpoints.open(join(made.path, 'sub'), { location }))?.root).toBe(made.path);
    expect((await Checkpoints.open(other.path, { location }))?.root).toBe(other.path);
  });

  it('opens a repository whose path holds a newline, from a subdirectory, and captures it', async () => {
    // rev-parse answers one line per question: a newline in a path must not shift one answer into the next.
    const made = repo(false);
    const odd = join(made.path, 'two\nlines ');
    mkdirSync(join(odd, 'sub'), { recursive: true });
    made.git('init', '-q', odd);
    writeFileSync(join(odd, 'sub', 'a.txt'), 'a\n');
    const checkpoints = (await Checkpoints.open(join(odd, 'sub')))!;
    expect(checkpoints.root).toBe(odd);
    const ref = await checkpoints.capture('thread', 'turn', 'before');
    expect(made.git('-C', odd, 'show', `${ref.commit}:sub/a.txt`)).toBe('a\n');
    // The user's index (there is none yet) was not written: capture stages into a temporary one beside it.
    expect(existsSync(join(odd, '.git', 'index'))).toBe(false);
  });
});
