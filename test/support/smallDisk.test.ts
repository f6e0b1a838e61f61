import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { TurnloomError } from '../../domain/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { type SmallDisk, mountSmallDisk, smallDiskSkipReason } from './smallDisk.ts';

// Not root (or not Linux): skipped, with the reason; in CI this throws and the file fails instead.
const skipReason = await smallDiskSkipReason();

const child = import.meta.dirname + '/smallDiskChild.ts';
const isMounted = (path: string) => readFileSync('/proc/mounts', 'utf8').split('\n').some((line) => line.split(' ')[1] === path);

/** smallDiskChild.ts in a node process of its own: its exit, and its findings (one JSON object a line). */
async function runChild(mode: string): Promise<{ code: number | null; signal: string | null; findings: Array<Record<string, unknown>>; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const killer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => proc.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal])));
  clearTimeout(killer);
  const findings = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { code, signal, findings, stderr };
}

const disks: SmallDisk[] = [];
const engines: Engine[] = [];
async function disk(sizeMiB = 8): Promise<SmallDisk> {
  const mounted = await mountSmallDisk({ sizeMiB });
  if (!mounted.mounted) throw new Error(mounted.reason);
  disks.push(mounted);
  return mounted;
}
async function engineOn(on: SmallDisk): Promise<{ engine: Engine; store: LmdbStore; dir: string }> {
  const dir = join(on.path, 'store');
  const store = LmdbStore.open(dir);
  const engine = await Engine.open({ store });
  engines.push(engine);
  return { engine, store, dir };
}
afterEach(async () => {
  // Room first: closing a store on a full disk can fail (see below).
  for (const each of disks) each.free();
  for (const engine of engines.splice(0)) await engine.close().catch(() => {});
  for (const each of disks.splice(0)) each.unmount();
});

const create = (n: number | string, title = 'a thread') => ({ type: 'thread.create' as const, commandId: `c${n}`, threadId: `t${n}`, title, workspace: null, owner: null });

/**
 * What a commit on a full disk throws, as lmdb-js 3.5 raises it: a plain Error with LMDB's
 * errno as a NUMBER in `code` (not 'ENOSPC'). Which errno depends on where the disk ran out:
 * - 5, 'Input/output error': LMDB's pwritev wrote part of the pages (the disk filled during the
 *   write) and LMDB maps a short write to EIO (mdb.c: "short write, filesystem full?");
 * - 28, 'No space left on device: Attempting to write page at position P, size S, blocks B, buffer
 *   sizes …': not one byte could be written; lmdb-js appends where (and its native code also prints
 *   "Write error: No space left on device position P, size S" to stderr, without a newline).
 */
function expectDiskFull(error: unknown): 5 | 28 {
  expect(error).toBeInstanceOf(Error);
  // The engine passes it on as it is: not a TurnloomError, no code a client would understand.
  expect(error).not.toBeInstanceOf(TurnloomError);
  const { code, message } = error as { code: unknown; message: string };
  expect([5, 28]).toContain(code);
  if (code === 5) expect(message).toBe('Input/output error');
  else expect(message).toMatch(/^No space left on device: Attempting to write page at position \d+, size \d+, blocks \d+/);
  return code as 5 | 28;
}

describe.skipIf(skipReason !== null)('test harness: small disk (tmpfs)', () => {
  it('mounts a disk of the size asked; fill() fills it (or leaves the room asked), free() gives it back; unmount twice is fine', async () => {
    const small = await disk(4);
    expect(isMounted(small.path)).toBe(true);
    expect(small.sizeBytes).toBe(4 * 1024 * 1024);
    expect(small.available()).toBe(small.sizeBytes);

    expect(await small.fill()).toBe(0);
    expect(() => writeFileSync(join(small.path, 'one-more'), 'x')).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    small.free();
    expect(small.available()).toBe(small.sizeBytes);

    const left = await small.fill(100_000);
    expect(left).toBeGreaterThanOrEqual(100_000);
    expect(left).toBeLessThan(100_000 + 2 * 4096);
    writeFileSync(join(small.path, 'fits'), Buffer.alloc(90_000));
    small.free();

    small.unmount();
    small.unmount();
    expect(isMounted(small.path)).toBe(false);
    expect(existsSync(small.path)).toBe(false);
  });

  it('is unmounted when the test process exits, even by a crash', async () => {
    for (const mode of ['exit', 'throw']) {
      const { code, findings } = await runChild(mode);
      expect(code).toBe(mode === 'exit' ? 0 : 1);
      const path = findings[0]!.path as string;
      expect(path).toMatch(/turnloom-disk-/);
      expect(isMounted(path)).toBe(false);
      expect(existsSync(path)).toBe(false);
    }
  });

  it('says in one line why it cannot mount when not root, and in CI that is an error', async () => {
    const { code, findings } = await runChild('nobody');
    expect(code).toBe(0);
    expect(findings[0]).toEqual({ mounted: false, reason: expect.stringMatching(/^cannot mount a 1 MiB tmpfs as uid 65534 \(not root\): mount: .*superuser/) });
    expect(findings[0]!.reason).not.toContain('\n');
    expect(findings[1]!.ci).toMatch(/^threw: cannot mount .*; CI must run the full-disk tests/);
  });
});

describe.skipIf(skipReason !== null)('lmdb-js 3.5 (adapters/lmdbStore.ts) on a full disk', () => {
  it('a commit that runs out of room fails with LMDB errno 5 or 28; the process lives, reads go on, and writes succeed once there is room', async () => {
    const small = await disk(8);
    const { engine, store, dir } = await engineOn(small);
    await small.fill(256 * 1024);
    let accepted = 0;
    let failure: unknown;
    const title = 'x'.repeat(2_000);
    for (; accepted < 5_000; accepted += 1) {
      try {
        await engine.submit(create(accepted, `${title} ${accepted}`));
      } catch (error) {
        failure = error;
        break;
      }
    }
    expect(accepted).toBeGreaterThan(0);
    const errno = expectDiskFull(failure);
    console.log(`full disk: ${accepted} commits went in, then errno ${errno}: ${(failure as Error).message}`);

    // LMDB writes pages with pwritev (lmdb-js maps its file read-only; no writable mmap, so no SIGBUS):
    // the failed transaction is aborted whole, the process and what was committed are untouched.
    expect(store.lastSeq()).toBe(accepted);
    expect(store.readSummary('t0')?.title).toBe(`${title} 0`);
    expect(store.readReceipt(`c${accepted}`)).toBeUndefined();
    // Still full: the same command fails the same way.
    expectDiskFull(await engine.submit(create(accepted, `${title} ${accepted}`)).catch((error: unknown) => error));

    small.free();
    await expect(engine.submit(create(accepted, `${title} ${accepted}`))).resolves.toMatchObject({ fromThreadSeq: 1, toThreadSeq: 1 });
    await expect(engine.submit(create('-after'))).resolves.toMatchObject({ fromThreadSeq: 1 });
    await engine.close();

    const reopened = LmdbStore.open(dir);
    expect(reopened.lastSeq()).toBe(accepted + 2);
    expect([...reopened.threadsNewestFirst(null)]).toHaveLength(accepted + 2);
    await reopened.close();
  });

  it('on a disk full before the store wrote anything, a commit fails with ENOSPC (28), lmdb-js saying where', async () => {
    const small = await disk(8);
    const { engine, store } = await engineOn(small);
    await small.fill();
    for (const n of [1, 2, 3]) {
      const error = await engine.submit(create(n)).catch((caught: unknown) => caught);
      expect(expectDiskFull(error)).toBe(28);
    }
    expect(store.lastSeq()).toBe(0);
    small.free();
    await expect(engine.submit(create(4))).resolves.toMatchObject({ fromThreadSeq: 1 });
  });

  it('a store cannot be opened in a new folder on a full disk: one TurnloomError saying so', async () => {
    const small = await disk(2);
    await small.fill();
    const path = join(small.path, 'fresh');
    expect(() => LmdbStore.open(path)).toThrow(
      expect.objectContaining({ code: 'invalid_payload', message: `cannot use ${path} as the data folder: the disk is full; choose a folder this user can write` }),
    );
  });

  it("close() on a full disk closes the store and leaves no rejection behind (lmdb-js's async transaction would, fatal to a plain node process)", async () => {
    // In a process of its own, without a handler: a stray rejection would end it with code 1.
    const child = await runChild('close-on-full-disk');
    expect(child.signal).toBeNull();
    expect(child.code).toBe(0);
    expect(child.findings).toEqual([{ close: 'ok' }, { survived: true }]);
    // The store's first write there fails and says so; nothing else does.
    expect(child.stderr).not.toContain('Commit failed');
  });
});
