import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `use` with an index file of its own, so staging never touches the user's index.
 * Seeding it from the real index lets `git add -A` trust the cached stat data and hash only files that changed;
 * `null` starts empty (for an index that `read-tree` fills).
 */
export async function withTemporaryIndex<T>(seed: string | null, use: (env: { GIT_INDEX_FILE: string }) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'turnloom-index-'));
  const file = join(dir, 'index');
  try {
    if (seed !== null) {
      await copyFile(seed, file).catch((error: NodeJS.ErrnoException) => {
        // A repository with nothing staged yet has no index: start empty.
        if (error.code !== 'ENOENT') throw error;
      });
    }
    return await use({ GIT_INDEX_FILE: file });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
