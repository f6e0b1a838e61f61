import { chownSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Checkpoints } from '../../adapters/git/index.ts';
import { type TestRepo, makeRepo, treeFingerprint } from './gitRepoFixture.ts';
import { type Markers, filteredFiles, hookNames, makeMarkers, plantHostileRepository, writeHook } from './hostileRepository.ts';

const repos: TestRepo[] = [];
const markerSets: Markers[] = [];
const repo = (init = true) => {
  const made = makeRepo(init);
  repos.push(made);
  return made;
};
const markers = () => {
  const made = makeMarkers();
  markerSets.push(made);
  return made;
};
afterEach(() => {
  vi.unstubAllEnvs();
  for (const made of repos.splice(0)) made.remove();
  for (const made of markerSets.splice(0)) made.remove();
});

const snapshotFiles = (made: TestRepo, commit: string) => made.git('ls-tree', '-r', '--name-only', commit).split('\n').filter(Boolean).sort();

/** A committed repository holding one file per filter driver of `filteredFiles`. */
function committedRepo(): TestRepo {
  const made = repo();
  for (const file of Object.keys(filteredFiles)) made.write(file, `${file} as committed\n`);
  made.git('add', '-A');
  made.git('commit', '-qm', 'base');
  return made;
}

/** What a turn does between its checkpoints: every filtered file changes, one is added. */
function changeEverything(made: TestRepo): void {
  for (const file of Object.keys(filteredFiles)) made.write(file, `${file} changed by the turn\n`);
  made.write('added.txt', 'new\n');
}

/** Capture, change, capture, diff and undo: every git command a turn and its revert run. */
async function fullCycle(made: TestRepo, checkpoints: Checkpoints): Promise<void> {
  const start = treeFingerprint(made.path);
  const before = await checkpoints.capture('thread', 'turn', 'before');
  changeEverything(made);
  const after = await checkpoints.capture('thread', 'turn', 'after');
  const diff = await checkpoints.diff(before.commit, after.commit);
  expect(diff.files.map((file) => file.path).sort()).toEqual(['added.txt', ...Object.keys(filteredFiles)].sort());
  expect(diff.patch).toContain('+plain.txt changed by the turn');
  await checkpoints.undo([{ turnId: 'turn', before: before.commit, after: after.commit }], { saveAs: { threadId: 'thread', id: 'revert-1' }, force: false });
  expect(treeFingerprint(made.path)).toEqual(start);
  // before, after, and the tree saved before the revert.
  expect(await checkpoints.list('thread')).toHaveLength(3);
}

describe("checkpoints on a repository whose config a model wrote: git runs none of the repository's code", () => {
  it('a planted fsmonitor, filters (any name), diff drivers, pager, editor, hooks and includes run nothing through capture, diff and undo', async () => {
    const made = committedRepo();
    const left = markers();
    plantHostileRepository(made, left);
    // From here on only turnloom's git runs here: the test's own would run the planted code.
    const checkpoints = (await Checkpoints.open(made.path))!;
    const failed = await fullCycle(made, checkpoints).then(() => null, (error: unknown) => error);
    // Markers first: when planted code runs, which ran says more than how git then failed.
    expect(left.left()).toEqual([]);
    expect(failed).toBeNull();
  });

  it('nor does what a parent process passes in its environment as config: parameters, system and global files', async () => {
    const made = committedRepo();
    made.write('.gitattributes', '* filter=ambient diff=ambient\n');
    made.git('add', '.gitattributes');
    made.git('commit', '-qm', 'attributes');
    const left = markers();
    const hooks = join(left.scratch, 'env-hooks');
    for (const hook of hookNames) writeHook(hooks, hook, left.touch(`env-hook-${hook}`));
    const hostileConfig = (scope: string) => {
      const file = join(left.scratch, `${scope}.gitconfig`);
      writeFileSync(
        file,
        `[core]\n\tfsmonitor = "${left.touch(`${scope}-fsmonitor`)}; false"\n\thooksPath = ${hooks}\n[filter "ambient"]\n\tclean = "${left.touch(`${scope}-clean`)}; cat"\n\tsmudge = "${left.touch(`${scope}-smudge`)}; cat"\n[diff "ambient"]\n\ttextconv = "${left.touch(`${scope}-textconv`)}; cat"\n`,
      );
      return file;
    };
    const checkpoints = (await Checkpoints.open(made.path))!;
    vi.stubEnv('GIT_CONFIG_SYSTEM', hostileConfig('system'));
    vi.stubEnv('GIT_CONFIG_GLOBAL', hostileConfig('global'));
    vi.stubEnv('GIT_CONFIG_PARAMETERS', `'core.fsmonitor'='${left.touch('parameters-fsmonitor')}; false' 'filter.ambient.clean'='${left.touch('parameters-clean')}; cat'`);
    const failed = await fullCycle(made, checkpoints).then(() => null, (error: unknown) => error);
    expect(left.left()).toEqual([]);
    expect(failed).toBeNull();
  });

  it('nor do the launcher variables and GIT_CONFIG_COUNT a parent process passes', async () => {
    const made = committedRepo();
    made.write('.gitattributes', '* filter=ambient\n');
    made.git('add', '.gitattributes');
    made.git('commit', '-qm', 'attributes');
    const left = markers();
    writeHook(left.scratch, 'launcher.sh', left.touch('launcher'));
    const checkpoints = (await Checkpoints.open(made.path))!;
    vi.stubEnv('GIT_CONFIG_COUNT', '1');
    vi.stubEnv('GIT_CONFIG_KEY_0', 'filter.ambient.clean');
    vi.stubEnv('GIT_CONFIG_VALUE_0', `${left.touch('count-clean')}; cat`);
    for (const name of ['GIT_EXTERNAL_DIFF', 'GIT_SSH_COMMAND', 'GIT_SSH', 'GIT_ASKPASS', 'SSH_ASKPASS', 'GIT_EDITOR', 'GIT_SEQUENCE_EDITOR', 'GIT_PAGER', 'PAGER', 'EDITOR', 'GIT_PROXY_COMMAND']) {
      vi.stubEnv(name, join(left.scratch, 'launcher.sh'));
    }
    const failed = await fullCycle(made, checkpoints).then(() => null, (error: unknown) => error);
    expect(left.left()).toEqual([]);
    expect(failed).toBeNull();
  });

  it.each([
    ['an ext:: remote helper', (touch: string) => [['remote.origin.url', `ext::sh -c ${touch.replace(' ', '% ')}`], ['protocol.ext.allow', 'always']]],
    ['core.sshCommand', (touch: string) => [['remote.origin.url', 'ssh://git.invalid/repository'], ['core.sshCommand', touch]]],
  ])('a lazy fetch from a planted promisor remote reaches no transport: %s never runs', async (_, planted) => {
    const upstream = committedRepo();
    upstream.git('config', 'uploadpack.allowFilter', 'true');
    const clone = repo(false);
    clone.git('clone', '-q', '--filter=blob:none', '--no-checkout', `file://${upstream.path}`, '.');
    const left = markers();
    for (const [name, value] of planted(left.touch('transport'))) clone.git('config', name!, value!);
    const checkpoints = (await Checkpoints.open(clone.path))!;
    // Undoing a turn that emptied the work tree brings HEAD's files back: blobs this clone never fetched.
    const emptied = clone.git('commit-tree', '-m', 'the turn removed everything', '4b825dc642cb6eb9a060e54bf8d69288fbee4904').trim();
    const turn = { turnId: 'turn', before: clone.git('rev-parse', 'HEAD').trim(), after: emptied };
    await expect(checkpoints.undo([turn], { saveAs: { threadId: 'thread', id: 'revert-1' }, force: false })).rejects.toThrow(/not allowed|could not fetch/);
    expect(left.left()).toEqual([]);
  });

  it('a planted submodule.recurse and diff.submodule reach no submodule, whose own config could run code', async () => {
    const sub = committedRepo();
    sub.write('.gitattributes', '* filter=x\n');
    sub.git('add', '.gitattributes');
    sub.git('commit', '-qm', 'attributes');
    const made = committedRepo();
    made.git('-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub.path, 'sub');
    made.git('commit', '-qm', 'with a submodule');
    made.git('config', 'submodule.recurse', 'true');
    made.git('config', 'diff.submodule', 'diff');
    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    made.write('sub/plain.txt', 'changed inside the submodule\n');
    made.git('-C', 'sub', 'commit', '-qam', 'moved on');
    const left = markers();
    writeFileSync(
      join(made.git('-C', 'sub', 'rev-parse', '--absolute-git-dir').trim(), 'config'),
      `[core]\n\tfsmonitor = "${left.touch('sub-fsmonitor')}; false"\n[diff]\n\texternal = "${left.touch('sub-diff-external')}"\n[filter "x"]\n\tclean = "${left.touch('sub-clean')}; cat"\n\tsmudge = "${left.touch('sub-smudge')}; cat"\n`,
      { flag: 'a' },
    );
    const after = await checkpoints.capture('thread', 'turn', 'after');
    const diff = await checkpoints.diff(before.commit, after.commit);
    expect(diff.files.map((file) => file.path)).toEqual(['sub']);
    await checkpoints.undo([{ turnId: 'turn', before: before.commit, after: after.commit }], { saveAs: { threadId: 'thread', id: 'revert-1' }, force: false });
    expect(left.left()).toEqual([]);
  });

  it('a planted core.worktree moves no checkpoint out of the repository it was opened on', async () => {
    const made = committedRepo();
    const elsewhere = repo(false);
    elsewhere.write('precious.txt', 'not part of any checkpoint\n');
    const checkpoints = (await Checkpoints.open(made.path))!;
    made.git('config', 'core.worktree', elsewhere.path);
    const before = await checkpoints.capture('thread', 'turn', 'before');
    expect(snapshotFiles(made, before.commit)).toEqual(Object.keys(filteredFiles).sort());
    made.write('plain.txt', 'changed by the turn\n');
    const after = await checkpoints.capture('thread', 'turn', 'after');
    await checkpoints.undo([{ turnId: 'turn', before: before.commit, after: after.commit }], { saveAs: { threadId: 'thread', id: 'revert-1' }, force: false });
    expect(elsewhere.read('precious.txt')).toBe('not part of any checkpoint\n');
    // Opened afterwards, the repository's work tree is not the folder asked about: no checkpoints there at all.
    expect(await Checkpoints.open(made.path)).toBeNull();
  });
});

describe('a planted core.worktree above the repository', () => {
  it('opens no checkpoints (git would take the parent folder for the work tree), and does not throw', async () => {
    const made = committedRepo();
    made.git('config', 'core.worktree', '../..');
    expect(await Checkpoints.open(made.path)).toBeNull();
  });
});

describe('what checkpoints still take from the user’s own git config', () => {
  it('the global core.excludesFile still decides what is ignored, and the repository’s own one still beats it', async () => {
    const made = committedRepo();
    const left = markers();
    writeFileSync(join(left.scratch, 'global-ignore'), '*.secret\n');
    writeFileSync(join(left.scratch, 'global.gitconfig'), `[core]\n\texcludesFile = ${join(left.scratch, 'global-ignore')}\n`);
    vi.stubEnv('GIT_CONFIG_GLOBAL', join(left.scratch, 'global.gitconfig'));
    made.write('key.secret', 'hunter2\n');
    made.write('notes.local', 'mine\n');
    const checkpoints = (await Checkpoints.open(made.path))!;
    expect(snapshotFiles(made, (await checkpoints.capture('thread', 'one', 'before')).commit)).not.toContain('key.secret');
    writeFileSync(join(left.scratch, 'local-ignore'), '*.local\n');
    made.git('config', 'core.excludesFile', join(left.scratch, 'local-ignore'));
    const files = snapshotFiles(made, (await checkpoints.capture('thread', 'two', 'before')).commit);
    expect(files).toContain('key.secret');
    expect(files).not.toContain('notes.local');
  });

  it('a global safe.directory still lets checkpoints open a repository another user owns', async (context) => {
    if (process.getuid?.() !== 0) return context.skip('only root can give a repository to another user here');
    const made = committedRepo();
    // git checks who owns the work tree and the git dir.
    chownSync(made.path, 4242, 4242);
    chownSync(join(made.path, '.git'), 4242, 4242);
    const left = markers();
    vi.stubEnv('GIT_CONFIG_GLOBAL', join(left.scratch, 'empty.gitconfig'));
    writeFileSync(join(left.scratch, 'empty.gitconfig'), '');
    expect(await Checkpoints.open(made.path)).toBeNull();
    writeFileSync(join(left.scratch, 'empty.gitconfig'), `[safe]\n\tdirectory = ${made.path}\n`);
    const checkpoints = (await Checkpoints.open(made.path))!;
    expect(checkpoints.root).toBe(made.path);
    const { commit } = await checkpoints.capture('thread', 'turn', 'before');
    expect(made.git('-c', `safe.directory=${made.path}`, 'ls-tree', '-r', '--name-only', commit).split('\n').filter(Boolean).sort()).toEqual(Object.keys(filteredFiles).sort());
  });
});

// Keeps the fixture honest: the same planted repository does run its code under a plain git.
describe('the hostile repository fixture', () => {
  it('runs its fsmonitor, filters and hooks under a plain git add and update-ref', () => {
    const made = committedRepo();
    const left = markers();
    plantHostileRepository(made, left);
    changeEverything(made);
    made.git('add', '-A', '--', ':!*.proc');
    // The planted long-running filter speaks no protocol: git gives up once it has started it.
    expect(() => made.git('add', '-A')).toThrow(/hung up/);
    made.git('update-ref', 'refs/heads/elsewhere', 'HEAD');
    expect(left.left()).toEqual(
      expect.arrayContaining(['fsmonitor', 'filter-x-clean', 'filter-equals-clean', 'filter-process', 'filter-unnamed-clean', 'filter-included-clean', 'hooksPath-post-index-change', 'hooksPath-reference-transaction']),
    );
  });
});
