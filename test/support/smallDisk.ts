import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, rmdirSync, statfsSync, ftruncateSync, fstatSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A small tmpfs, for tests of what happens when the disk is full. tmpfs has
 * a hard size, needs no image file or loop device, and goes away with its
 * memory on unmount. Mounting needs root (or CAP_SYS_ADMIN) on Linux: where
 * that is missing `mountSmallDisk` says why instead, and `smallDiskSkipReason`
 * turns that into a skip, or into a failure in CI.
 */
export interface SmallDisk {
  readonly mounted: true;
  /** The mount point: an empty folder of `sizeMiB` MiB. */
  readonly path: string;
  readonly sizeBytes: number;
  /**
   * Writes a filler file until the disk is full (ENOSPC), then gives back
   * `leaveBytes` (rounded up to whole pages). Resolves with the bytes left
   * free. Calling it again fills what was freed since.
   */
  fill(leaveBytes?: number): Promise<number>;
  /** Deletes the filler: the room it took is free again. */
  free(): void;
  /** Bytes free on the disk now. */
  available(): number;
  /**
   * Unmounts (lazily if a file there is still open) and removes the mount
   * point. Idempotent; also runs when the process exits, crash included, but
   * not when a signal kills it: then `umount /tmp/turnloom-disk-*` by hand.
   */
  unmount(): void;
}

/** Why no disk could be mounted, in one line. */
export interface NoSmallDisk {
  readonly mounted: false;
  readonly reason: string;
}

const FILLER = '.filler';
const mounted = new Set<() => void>();
process.once('exit', () => {
  for (const unmount of [...mounted]) unmount();
});

/** One line of a command's failure: its stderr, or how it failed to run. */
function failure(result: ReturnType<typeof spawnSync>): string | null {
  if (result.error) return result.error.message;
  if (result.status === 0) return null;
  return String(result.stderr ?? '').trim().split('\n')[0] || `exit ${result.status ?? result.signal}`;
}

export async function mountSmallDisk({ sizeMiB }: { sizeMiB: number }): Promise<SmallDisk | NoSmallDisk> {
  if (process.platform !== 'linux') return { mounted: false, reason: `a tmpfs can only be mounted on Linux (this is ${process.platform})` };
  const path = mkdtempSync(join(tmpdir(), 'turnloom-disk-'));
  const mountFailed = failure(spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', path], { encoding: 'utf8', timeout: 10_000 }));
  if (mountFailed) {
    rmdirSync(path);
    const who = process.getuid?.() === 0 ? 'as root' : `as uid ${process.getuid?.()} (not root)`;
    return { mounted: false, reason: `cannot mount a ${sizeMiB} MiB tmpfs ${who}: ${mountFailed}` };
  }

  let gone = false;
  const unmount = () => {
    if (gone) return;
    gone = true;
    mounted.delete(unmount);
    // Plain first; lazily if something still holds a file there (a store a failed test did not close).
    if (failure(spawnSync('umount', [path], { encoding: 'utf8' }))) spawnSync('umount', ['-l', path]);
    try {
      rmdirSync(path);
    } catch {
      // Still mounted (umount refused even lazily): leave the folder rather than throw from an exit hook.
    }
  };
  mounted.add(unmount);

  const available = () => {
    const stats = statfsSync(path);
    return stats.bavail * stats.bsize;
  };

  return {
    mounted: true,
    path,
    sizeBytes: sizeMiB * 1024 * 1024,
    available,
    unmount,
    fill: async (leaveBytes = 0) => {
      const fd = openSync(join(path, FILLER), 'a');
      try {
        // Big writes, halving on ENOSPC down to one byte: the disk ends full to the last byte the file system gives.
        const chunk = Buffer.alloc(1024 * 1024);
        for (let size = chunk.length; size >= 1; ) {
          try {
            writeSync(fd, chunk, 0, size);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
            size = Math.floor(size / 2);
          }
        }
        // Down to a page boundary: a page the filler still touches stays taken, so cut whole pages only.
        const page = statfsSync(path).bsize;
        if (leaveBytes > 0) ftruncateSync(fd, Math.max(0, Math.floor((fstatSync(fd).size - leaveBytes) / page) * page));
      } finally {
        closeSync(fd);
      }
      return available();
    },
    free: () => rmSync(join(path, FILLER), { force: true }),
  };
}

/**
 * null when this machine can mount a small disk; otherwise why not, for
 * `describe.skipIf` — except in CI (CI=true), where a test that needs the
 * disk must run, so this throws instead, like the browser tests do.
 */
export async function smallDiskSkipReason(): Promise<string | null> {
  const probe = await mountSmallDisk({ sizeMiB: 1 });
  if (probe.mounted) {
    probe.unmount();
    return null;
  }
  if (process.env.CI === 'true') throw new Error(`${probe.reason}; CI must run the full-disk tests (run them as root)`);
  console.warn(`${probe.reason}; skipping the full-disk tests`);
  return probe.reason;
}
