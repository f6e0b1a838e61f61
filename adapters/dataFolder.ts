import { type Stats, accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { TurnloomError } from '../domain/index.ts';

const reasons: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
  ENOTDIR: 'a parent of it is a file',
  // mkdir under an existing folder that refuses new entries (/proc) says ENOENT.
  ENOENT: 'folders cannot be created there',
};

const unusable = (path: string, why: string) =>
  new TurnloomError('invalid_payload', `cannot use ${path} as the data folder: ${why}; pass a writable folder with --data`, { path, reason: why });

const reasonOf = (error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  return reasons[code] ?? (code || String(error));
};

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** mkdir -p, one level at a time: Node's recursive mkdir spins forever under /proc. */
function makeFolder(path: string, target: string): void {
  const parent = dirname(path);
  if (parent !== path) {
    const above = statOrNull(parent);
    if (above === null) makeFolder(parent, target);
    else if (!above.isDirectory()) throw unusable(target, 'a parent of it is a file');
  }
  mkdirSync(path);
}

/**
 * Makes sure `path` is a folder this process can write, creating it if
 * needed, before LMDB is pointed at it (LMDB on a file, or under /proc, fails
 * in ways no user should have to read). Throws one clear `TurnloomError`.
 */
export function prepareDataFolder(path: string): void {
  try {
    const found = statOrNull(path);
    if (found === null) makeFolder(path, path);
    else if (!found.isDirectory()) throw unusable(path, 'it is a file, not a folder');
    accessSync(path, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    if (error instanceof TurnloomError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw unusable(path, code === 'EACCES' || code === 'EROFS' ? `it is not writable (${reasonOf(error)})` : reasonOf(error));
  }
}
