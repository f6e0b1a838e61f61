import { readdir } from 'node:fs/promises';
import path from 'node:path';

const skipped = new Set(['.git', 'node_modules']);

/**
 * The regular files under `folder`, depth first, each folder's entries in
 * name order: the order `rg --sort path` prints, so the JS grep and ripgrep
 * agree. Symlinks are not followed (nor listed), as ripgrep does by default:
 * a link can lead out of the workspace or round in a loop.
 */
export async function* walkFiles(folder: string, signal: AbortSignal): AsyncGenerator<string> {
  signal.throwIfAborted();
  // An unreadable folder is passed over, as ripgrep passes it.
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (skipped.has(entry.name)) continue;
    const child = path.join(folder, entry.name);
    if (entry.isDirectory()) yield* walkFiles(child, signal);
    else if (entry.isFile()) yield child;
  }
}
