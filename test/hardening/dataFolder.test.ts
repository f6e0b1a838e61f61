import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { DataFolderLocked, LmdbStore } from '../../adapters/lmdbStore.ts';
import { currentProcess, isAlive } from '../../adapters/processIdentity.ts';
import { spawnEngineChild } from '../support/spawnChild.ts';
import { tempDir } from '../support/tempDir.ts';

const storeModule = new URL('../../adapters/lmdbStore.ts', import.meta.url).href;

/** Opens the folder in another process and reports what happened, as JSON. */
function openElsewhere(path: string): Promise<{ ok: boolean; name?: string; message?: string; pid?: number }> {
  const code = `
    const { LmdbStore } = await import(${JSON.stringify(storeModule)});
    try { const store = LmdbStore.open(${JSON.stringify(path)}); await store.close(); console.log(JSON.stringify({ ok: true })); }
    catch (error) { console.log(JSON.stringify({ ok: false, name: error.name, message: error.message, pid: error.holder?.pid })); }`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', () => resolve(JSON.parse(output.trim()))));
}

describe('the data folder', () => {
  let dir: ReturnType<typeof tempDir>;
  afterEach(() => dir.remove());

  it('is held by one process: a second one is refused with the folder and the holder’s pid', async () => {
    dir = tempDir('turnloom-lock-');
    const store = LmdbStore.open(dir.path);
    const refused = await openElsewhere(dir.path);
    expect(refused).toMatchObject({ ok: false, name: 'DataFolderLocked', pid: process.pid });
    expect(refused.message).toContain(dir.path);
    expect(refused.message).toContain(`pid ${process.pid}`);
    // Nor may this process open it twice.
    expect(() => LmdbStore.open(dir.path)).toThrow(DataFolderLocked);
    await store.close();
    expect(await openElsewhere(dir.path)).toEqual({ ok: true });
  });

  it('is taken over from a holder killed with SIGKILL', async () => {
    dir = tempDir('turnloom-lock-');
    const child = spawnEngineChild(['repair-scenario', dir.path]);
    await child.ready;
    expect(await openElsewhere(dir.path)).toMatchObject({ ok: false, pid: child.process.pid });
    await child.kill();
    const store = LmdbStore.open(dir.path);
    expect(store.openTurns()).toHaveLength(3);
    await store.close();
  });

  it('is a folder whatever its name: one with a dot in it (state.v2) opens, holds its files, and leaves nothing beside it', async () => {
    dir = tempDir('turnloom-lock-');
    const path = join(dir.path, 'state.v2');
    const store = LmdbStore.open(path);
    await store.close();
    expect(readdirSync(path).sort()).toEqual(expect.arrayContaining(['data.mdb', 'lock.mdb']));
    expect(readdirSync(dir.path)).toEqual(['state.v2']);
    // And it opens again, as a folder, with what it held.
    const again = LmdbStore.open(path);
    expect(again.lastSeq()).toBe(0);
    await again.close();
  });

  it('counts a holder killed but not yet reaped (a zombie) as gone', async () => {
    dir = tempDir('turnloom-lock-');
    // The shell execs into sleep, which never reaps its backgrounded child: kill that child and it stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 30 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const holder = { ...currentProcess(), pid, startTicks: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) };
      expect(isAlive(holder)).toBe(true);
      // Until the shell has become sleep it would still reap the child itself (seen on a loaded machine).
      await expect.poll(() => readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim()).toBe('sleep');
      process.kill(pid, 'SIGKILL');
      await expect.poll(() => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0]).toBe('Z');
      expect(isAlive(holder)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('inside a git repository, stays out of git status; a symlink planted at one of its own files is replaced, never followed', async () => {
    dir = tempDir('turnloom-lock-');
    execFileSync('git', ['init', '-q', dir.path]);
    const outside = join(dir.path, 'precious.txt');
    writeFileSync(outside, 'keep me\n');
    const data = join(dir.path, '.turnloom', 'run');
    await LmdbStore.open(data).close();
    expect(execFileSync('git', ['-C', dir.path, 'status', '--porcelain', '--untracked-files=all'], { encoding: 'utf8' })).toBe('?? precious.txt\n');
    // A model that can write in the workspace points the folder's own files elsewhere.
    for (const own of ['turnloom-data', '.gitignore']) {
      rmSync(join(data, own));
      symlinkSync(outside, join(data, own));
    }
    await LmdbStore.open(data).close();
    expect(readFileSync(outside, 'utf8')).toBe('keep me\n');
    expect(lstatSync(join(data, 'turnloom-data')).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(data, 'turnloom-data'), 'utf8')).toMatch(/^turnloom data folder\n/);
  });

  it('is the user’s alone: made 0700 with the folders above it, an older one tightened, and another local user cannot read a thread', async () => {
    dir = tempDir('turnloom-lock-');
    const data = join(dir.path, 'home', 'turnloom', 'run');
    await LmdbStore.open(data).close();
    for (const folder of [data, join(dir.path, 'home', 'turnloom'), join(dir.path, 'home')]) expect(statSync(folder).mode & 0o777, folder).toBe(0o700);
    // One made before folders were private: opened, it is tightened; a folder of the user's own things is left as it is.
    chmodSync(data, 0o755);
    await LmdbStore.open(data).close();
    expect(statSync(data).mode & 0o777).toBe(0o700);
    const shared = join(dir.path, 'shared');
    mkdirSync(shared, { mode: 0o755 });
    chmodSync(shared, 0o755);
    writeFileSync(join(shared, 'readme.txt'), 'the user keeps other things here\n');
    await LmdbStore.open(shared).close();
    expect(statSync(shared).mode & 0o777).toBe(0o755);
    // As another user (root can be anyone: the CI runs as root; as anyone else, the mode bits above say the same).
    if (process.getuid?.() === 0) {
      chmodSync(dir.path, 0o755);
      const read = spawnSync('su', ['-s', '/bin/sh', 'nobody', '-c', `cat ${join(data, 'data.mdb')} > /dev/null`], { encoding: 'utf8' });
      expect(read.status).not.toBe(0);
      expect(read.stderr).toMatch(/Permission denied/);
    }
  });

  it('must be a writable folder: a file or a place that cannot be created is one clear error', () => {
    dir = tempDir('turnloom-lock-');
    const file = join(dir.path, 'a-file');
    writeFileSync(file, 'not a folder');
    expect(() => LmdbStore.open(file)).toThrow(/cannot use .*a-file as the data folder: it is a file, not a folder/);
    expect(() => LmdbStore.open(join(file, 'below'))).toThrow(/cannot use .* as the data folder: a parent of it is a file/);
    expect(() => LmdbStore.open('/proc/nope')).toThrow(/cannot use \/proc\/nope as the data folder/);
  });
});
