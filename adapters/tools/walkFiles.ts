import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';

const skipped = new Set(['.git', 'node_modules']);

/**
 * How many entries a walk handles between two turns it gives the event
 * loop: entries already read come one after another without one, so an
 * interrupt's handler (SIGINT) or a deadline's timer would wait for the
 * whole folder and whatever the caller does with each entry.
 */
const entriesPerTurn = 100;

/**
 * The regular files under `folder`, depth first, each folder's entries in
 * name order: the order `rg --sort path` prints, so the JS grep and ripgrep
 * agree. Symlinks are not followed (nor listed), as ripgrep does by default:
 * a link can lead out of the workspace or round in a loop. Nor is anything
 * else that is not a regular file (a FIFO, whose reading would never end).
 * Throws once `signal` is aborted.
 */
export async function* walkFiles(folder: string, signal: AbortSignal): AsyncGenerator<string> {
  yield* walk(folder, signal, { entries: 0 });
}

async function* walk(folder: string, signal: AbortSignal, seen: { entries: number }): AsyncGenerator<string> {
  signal.throwIfAborted();
  // An unreadable folder is passed over, as ripgrep passes it.
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (++seen.entries % entriesPerTurn === 0) {
      await nextTurn();
      signal.throwIfAborted();
    }
    if (skipped.has(entry.name)) continue;
    const child = path.join(folder, entry.name);
    if (entry.isDirectory()) yield* walk(child, signal, seen);
    else if (entry.isFile()) yield child;
  }
}
