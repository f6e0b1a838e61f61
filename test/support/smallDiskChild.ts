/**
 * What smallDisk.test.ts runs in a process of its own: what must happen at
 * exit, as another user, or where lmdb-js leaves a rejection no caller can
 * catch (fatal in a plain node process, a failed run under vitest).
 * Prints one JSON line per finding.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { Engine } from '../../services/engine/engine.ts';
import { mountSmallDisk, smallDiskSkipReason } from './smallDisk.ts';

const say = (finding: Record<string, unknown>) => console.log(JSON.stringify(finding));
const mode = process.argv[2];

async function mounted() {
  const disk = await mountSmallDisk({ sizeMiB: 8 });
  if (!disk.mounted) throw new Error(disk.reason);
  return disk;
}

if (mode === 'exit' || mode === 'throw') {
  // Left mounted on purpose: the exit hook must unmount it.
  const disk = await mounted();
  say({ path: disk.path });
  if (mode === 'throw') throw new Error('a test that crashed');
  process.exit(0);
}

if (mode === 'nobody') {
  // Not root: the mount is refused, and said in one line; in CI that is an error.
  process.setgid!(65534);
  process.setuid!(65534);
  const disk = await mountSmallDisk({ sizeMiB: 1 });
  say({ mounted: disk.mounted, reason: disk.mounted ? null : disk.reason });
  process.env.CI = 'true';
  say({ ci: await smallDiskSkipReason().then(String, (error: Error) => `threw: ${error.message}`) });
}

if (mode === 'close-on-full-disk') {
  // No handler of our own: a rejection nobody handles ends this process, as it would end `turnloom serve`.
  const disk = await mounted();
  const dir = join(disk.path, 'store');
  const store = LmdbStore.open(dir);
  const engine = await Engine.open({ store });
  // Filled before any commit: the file has no free pages of its own to reuse, so a write there fails for certain.
  await disk.fill();
  try {
    await engine.close();
    say({ close: 'ok' });
  } catch (error) {
    say({ close: 'rejected', message: (error as Error).message });
  }
  await sleep(100);
  // The lock it could not give up is taken by the next opener, this process being gone by then.
  disk.free();
  say({ survived: true });
  disk.unmount();
}
