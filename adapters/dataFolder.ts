import { type Stats, accessSync, chmodSync, closeSync, constants, mkdirSync, openSync, readSync, readdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TurnloomError } from '../domain/index.ts';

/**
 * The file every data folder holds, saying what the folder is. A data folder
 * may sit inside the repository the agent works in (`--data .turnloom/run`):
 * checkpoints look for this file and leave its folder out, so no revert ever
 * rolls the event log back under a running engine.
 */
export const DATA_FOLDER_MARKER = 'turnloom-data';

/** The marker's first line: a file of that name that does not start with it is a user's own. */
const MARKER_SIGNATURE = 'turnloom data folder\n';

const markerText = `${MARKER_SIGNATURE}This folder holds a turnloom event log (LMDB). turnloom checkpoints never capture it and reverts never restore it.
Do not edit, copy or commit it while turnloom runs; to move it, stop turnloom and move the whole folder.
`;

/** Whether the file starts with these bytes (false when it cannot be read). */
export function fileStartsWith(path: string, expected: Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return false;
  }
  try {
    const head = Buffer.alloc(expected.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.equals(expected);
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** Whether `path` is a data folder's marker, written by `prepareDataFolder`. */
export const isDataFolderMarker = (path: string): boolean => fileStartsWith(path, Buffer.from(MARKER_SIGNATURE));

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
  new TurnloomError('invalid_payload', `cannot use ${path} as the data folder: ${why}; choose a folder this user can write`, { path, reason: why });

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

/**
 * mkdir -p, one level at a time: Node's recursive mkdir spins forever under
 * /proc. Every folder made is the user's alone (0700): a thread's log holds
 * code, prompts and whatever a command printed, which other local users
 * must not read.
 */
function makeFolder(path: string, target: string): void {
  const parent = dirname(path);
  if (parent !== path) {
    const above = statOrNull(parent);
    if (above === null) makeFolder(parent, target);
    else if (!above.isDirectory()) throw unusable(target, 'a parent of it is a file');
  }
  mkdirSync(path, { mode: PRIVATE });
}

const PRIVATE = 0o700;

/**
 * Writes one of the data folder's own files. The folder may be inside a
 * workspace a model writes to: a symlink planted in its place is removed,
 * never followed, so the write cannot land on a file elsewhere.
 */
function writeOwnFile(path: string, text: string): void {
  const open = () => openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
  let fd: number;
  try {
    fd = open();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOOP') throw error;
    unlinkSync(path);
    fd = open();
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes sure `path` is a folder this process can write, creating it if
 * needed, before LMDB is pointed at it (LMDB on a file, or under /proc, fails
 * in ways no user should have to read), and marks it as a data folder
 * (`DATA_FOLDER_MARKER`). Throws one clear `TurnloomError`.
 */
export function prepareDataFolder(path: string): void {
  try {
    const found = statOrNull(path);
    if (found === null) makeFolder(path, path);
    else if (!found.isDirectory()) throw unusable(path, 'it is a file, not a folder');
    accessSync(path, constants.R_OK | constants.W_OK | constants.X_OK);
    // A data folder made before folders were private, or opened as an empty folder, becomes the user's alone;
    // a folder of other things the user pointed --data at keeps the access they gave it.
    if (found !== null && (found.mode & 0o077) !== 0 && (isDataFolderMarker(join(path, DATA_FOLDER_MARKER)) || readdirSync(path).length === 0)) chmodSync(path, PRIVATE);
    // Written on every open: a marker someone deleted or changed is back before the next checkpoint looks for it.
    writeOwnFile(join(path, DATA_FOLDER_MARKER), markerText);
    // A data folder inside a repository stays out of the user's `git status` (`*` covers this file too).
    writeOwnFile(join(path, '.gitignore'), '# turnloom data folder: never committed\n*\n');
  } catch (error) {
    if (error instanceof TurnloomError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw unusable(path, code === 'EACCES' || code === 'EROFS' ? `it is not writable (${reasonOf(error)})` : reasonOf(error));
  }
}
