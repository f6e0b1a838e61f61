import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../adapters/git/index.ts';
import { DATA_FOLDER_MARKER } from '../../adapters/dataFolder.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { Engine } from '../../services/engine/engine.ts';
import { createThread } from '../support/engineFixture.ts';
import { type TestRepo, makeRepo, userState } from './gitRepoFixture.ts';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function repo(): TestRepo {
  const made = makeRepo();
  cleanup.push(() => made.remove());
  made.write('a.txt', 'a\n');
  made.git('add', '-A');
  made.git('commit', '-qm', 'base');
  return made;
}

/** A real engine on a real LMDB store in `folder`, as `turnloom run --data <folder>` has it. */
async function engineIn(folder: string) {
  let store = LmdbStore.open(folder);
  let engine = await Engine.open({ store });
  let running = true;
  const close = async () => {
    if (running) await engine.close();
    running = false;
  };
  cleanup.push(close);
  return {
    create: (threadId: string) => engine.submit(createThread(threadId)),
    close,
    /** Closes the engine, opens the folder again, and answers which threads its log holds. */
    async reopenedThreads(): Promise<string[]> {
      await close();
      store = LmdbStore.open(folder);
      engine = await Engine.open({ store });
      running = true;
      return [...new Set(store.readLog(0, 10_000).map((stored) => stored.threadId))].sort();
    },
  };
}

const filesOf = (made: TestRepo, commit: string) => made.git('ls-tree', '-r', '--name-only', commit).split('\n').filter(Boolean).sort();

/** What a database file is on disk: its inode (a rewrite makes a new one) and its bytes. */
const identity = (file: string) => ({ inode: statSync(file).ino, sha: createHash('sha256').update(readFileSync(file)).digest('hex') });

/** A commit built the way an older turnloom captured one: the given files, whatever they are. */
function commitOf(made: TestRepo, files: Record<string, string>): string {
  const index = join(mkdtempSync(join(tmpdir(), 'turnloom-test-index-')), 'index');
  cleanup.push(() => rmSync(join(index, '..'), { recursive: true, force: true }));
  const git = (args: string[], input?: string) =>
    execFileSync('git', args, { cwd: made.path, encoding: 'utf8', input, env: { ...process.env, GIT_INDEX_FILE: index } }).trim();
  for (const [path, content] of Object.entries(files)) git(['update-index', '--add', '--cacheinfo', `100644,${git(['hash-object', '-w', '--stdin'], content)},${path}`]);
  return git(['commit-tree', '-m', 'old checkpoint', git(['write-tree'])]);
}

describe('checkpoints leave data folders out', () => {
  it('never captures a data folder, whatever its name or place, nor any LMDB environment, while a store is open on it', async () => {
    const made = repo();
    const engine = await engineIn(join(made.path, 'notes', 'run 1'));
    await engine.create('t1');
    // An LMDB environment opened on a file (a name with an extension): `index.db` and its `index.db-lock`.
    const other = open({ path: join(made.path, 'cache', 'index.db') });
    cleanup.push(() => other.close());
    await other.put('key', 'value');
    // Look-alikes of the user's own are kept: a file named like the marker, a file named like a lock.
    made.write(`notes/${DATA_FOLDER_MARKER}`, 'my own notes\n');
    made.write('notes/build-lock', 'not a database\n');
    expect(readdirSync(join(made.path, 'notes', 'run 1')).sort()).toEqual(['.gitignore', 'data.mdb', 'lock.mdb', DATA_FOLDER_MARKER]);
    // Its .gitignore keeps it out of git status; a tool that deletes it must not bring the database into a checkpoint.
    rmSync(join(made.path, 'notes', 'run 1', '.gitignore'));

    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    made.write('b.txt', 'b\n');
    await engine.create('t2');
    const after = await checkpoints.capture('thread', 'turn', 'after');

    const kept = ['a.txt', 'notes/build-lock', `notes/${DATA_FOLDER_MARKER}`];
    expect(filesOf(made, before.commit)).toEqual(kept);
    expect(filesOf(made, after.commit)).toEqual([...kept, 'b.txt'].sort());
    expect((await checkpoints.diff(before.commit, after.commit)).files.map((file) => file.path)).toEqual(['b.txt']);
  });

  it('a revert leaves the open database as it is, and the log still holds every event after a restart', async () => {
    const made = repo();
    const folder = join(made.path, 'state', 'x');
    const engine = await engineIn(folder);
    await engine.create('t1');
    // Without the .gitignore that would hide it from git, as a tool may leave it.
    rmSync(join(folder, '.gitignore'));
    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    // The turn: the engine writes on while the files change.
    await engine.create('t2');
    made.write('a.txt', 'changed\n');
    made.write('b.txt', 'b\n');
    const after = await checkpoints.capture('thread', 'turn', 'after');
    await engine.create('t3');

    const database = identity(join(folder, 'data.mdb'));
    const { changes } = await checkpoints.undo([{ turnId: 'turn', before: before.commit, after: after.commit }], { saveAs: { threadId: 'thread', id: 'revert-1' }, force: false });

    expect(made.read('a.txt')).toBe('a\n');
    expect(existsSync(join(made.path, 'b.txt'))).toBe(false);
    await engine.create('t4');
    expect(identity(join(folder, 'data.mdb')).inode).toBe(database.inode);
    expect(await engine.reopenedThreads()).toEqual(['t1', 't2', 't3', 't4']);
    // Reopened, the folder wrote its own .gitignore again.
    expect(readdirSync(folder).sort()).toEqual(['.gitignore', 'data.mdb', 'lock.mdb', DATA_FOLDER_MARKER]);
    expect(changes.files.map((file) => [file.path, file.status])).toEqual([
      ['a.txt', 'modified'],
      ['b.txt', 'deleted'],
    ]);
  });

  it('undoing a turn whose checkpoints hold database files (an older turnloom captured them) neither writes them nor replaces their folder', async () => {
    const made = repo();
    // Ignored, as a user would have it: the snapshot is from before the .gitignore.
    made.write('.gitignore', 'state/\n');
    const folder = join(made.path, 'state', 'db');
    const engine = await engineIn(folder);
    await engine.create('t1');
    const checkpoints = (await Checkpoints.open(made.path))!;
    const database = identity(join(folder, 'data.mdb'));
    const now = { 'a.txt': made.read('a.txt'), '.gitignore': 'state/\n' };
    const holdingTheDatabase = {
      turnId: 'old-turn',
      before: commitOf(made, { ...now, 'a.txt': 'old\n', 'state/db/data.mdb': 'an old database', 'state/db/lock.mdb': 'an old lock', 'state/db/notes.txt': 'something else of the old folder' }),
      after: commitOf(made, { ...now, 'state/db/data.mdb': 'a newer old database' }),
    };
    const fileInTheWay = { turnId: 'older-turn', before: commitOf(made, { ...now, 'a.txt': 'older\n', state: 'a file where the folder is now' }), after: commitOf(made, now) };
    const options = (id: string) => ({ saveAs: { threadId: 'thread', id }, force: false });

    const { changes } = await checkpoints.undo([holdingTheDatabase], options('revert-1'));
    expect(made.read('a.txt')).toBe('old\n');
    expect(identity(join(folder, 'data.mdb'))).toEqual(database);
    expect(existsSync(join(folder, 'notes.txt'))).toBe(false);
    expect(changes.files.map((file) => file.path)).toEqual(['a.txt']);

    made.write('a.txt', now['a.txt']);
    await checkpoints.undo([fileInTheWay], options('revert-2'));
    expect(made.read('a.txt')).toBe('older\n');
    expect(statSync(join(made.path, 'state')).isDirectory()).toBe(true);
    expect(identity(join(folder, 'data.mdb'))).toEqual(database);
    await engine.create('t2');
    expect(await engine.reopenedThreads()).toEqual(['t1', 't2']);
  });

  it("leaves a data folder out even when the user's index tracks it, and leaves that index as it was", async () => {
    const made = repo();
    const engine = await engineIn(join(made.path, 'db'));
    await engine.create('t1');
    made.git('add', '-A');
    const start = userState(made);
    const checkpoints = (await Checkpoints.open(made.path))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    expect(filesOf(made, before.commit)).toEqual(['a.txt']);
    expect(userState(made).index).toEqual(start.index);
  });

  it('leaves out the folders it is given as well, marked or not, also when named through a symlink', async () => {
    const made = repo();
    made.write('private/keys.txt', 'one\n');
    made.write('also/keys.txt', 'one\n');
    const link = join(mkdtempSync(join(tmpdir(), 'turnloom-link-')), 'repo');
    cleanup.push(() => rmSync(dirname(link), { recursive: true, force: true }));
    symlinkSync(made.path, link);
    const checkpoints = (await Checkpoints.open(made.path, { exclude: [join(made.path, 'private'), join(link, 'also'), '/somewhere/else'] }))!;
    const before = await checkpoints.capture('thread', 'turn', 'before');
    expect(filesOf(made, before.commit)).toEqual(['a.txt']);
    made.write('private/keys.txt', 'two\n');
    made.write('a.txt', 'changed\n');
    const after = await checkpoints.capture('thread', 'turn', 'after');
    await checkpoints.undo([{ turnId: 'turn', before: before.commit, after: after.commit }], { saveAs: { threadId: 'thread', id: 'revert-1' }, force: false });
    expect(made.read('a.txt')).toBe('a\n');
    expect(made.read('private/keys.txt')).toBe('two\n');
  });
});
