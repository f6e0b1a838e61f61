import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { DATA_FOLDER_MARKER, fileStartsWith, isDataFolderMarker } from '../dataFolder.ts';

/*
 * What a checkpoint never holds, whatever the work tree says: turnloom's data
 * folders and any LMDB environment's files. Capturing one copies a live
 * database into git; restoring one rewrites it under the engine that holds it
 * open, which then writes on into a deleted file and loses its log.
 */

/** LMDB's file names in a folder environment, left out wherever they are: nobody's source. */
const lmdbFileNames = ['data.mdb', 'lock.mdb'];

/** An environment opened on a file `x` keeps its lock in `x-lock`, which starts with LMDB's magic number (0xBEEFC0DE) in either byte order. */
const LOCK_SUFFIX = '-lock';
const lockMagics = [Buffer.from([0xde, 0xc0, 0xef, 0xbe]), Buffer.from([0xbe, 0xef, 0xc0, 0xde])];

/** What `git ls-files` is asked to list for `excludedPaths`: markers, lock files and LMDB files. */
export const candidatePathspecs = [DATA_FOLDER_MARKER, `*${LOCK_SUFFIX}`, ...lmdbFileNames].map((name) => `:(glob)**/${name}`);

/**
 * Reads a NUL-separated listing of candidates (repository-relative paths)
 * into the paths to leave out (`/`-separated, relative to `root`): the
 * folder of every genuine marker, every LMDB file, every LMDB lock file with
 * the file it locks, and each of `folders` (absolute) that lies inside
 * `root`. A marker at the top of the work tree is not followed: the whole
 * repository is no data folder.
 */
export function excludedPaths(root: string, listing: string, folders: readonly string[]): string[] {
  const excluded = new Set<string>();
  for (const path of listing.split('\0')) {
    const name = basename(path);
    if (lmdbFileNames.includes(name)) excluded.add(path);
    else if (name === DATA_FOLDER_MARKER && dirname(path) !== '.' && isDataFolderMarker(join(root, path))) excluded.add(dirname(path));
    else if (name.endsWith(LOCK_SUFFIX) && name !== LOCK_SUFFIX && lockMagics.some((magic) => fileStartsWith(join(root, path), magic))) {
      excluded.add(path);
      excluded.add(path.slice(0, -LOCK_SUFFIX.length));
    }
  }
  for (const folder of folders) {
    // git names the top level with symlinks resolved; a folder given through a symlink (/tmp on macOS) must be too.
    const inside = relative(root, realOrAsGiven(folder));
    if (inside !== '' && !inside.startsWith('..') && !isAbsolute(inside)) excluded.add(inside.split(sep).join('/'));
  }
  return [...excluded].sort();
}

function realOrAsGiven(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // Not there (yet): nothing in it to capture either.
    return path;
  }
}

/** Pathspecs matching everything left out, on disk or only in a snapshot (for `git rm --cached`). */
export const excludedPathspecs = (excluded: string[]): string[] => [...lmdbFileNames.map((name) => `:(glob)**/${name}`), ...excluded.map((path) => `:(literal)${path}`)];

/** Pathspecs matching the whole work tree except what is left out (for `git add`, which then never even reads a database). */
export const includedPathspecs = (excluded: string[]): string[] => ['.', ...excludedPathspecs(excluded).map((spec) => spec.replace(/^:\(/, ':(exclude,'))];

/** Every folder above a left-out path: a snapshot holding a file there would replace the folder, database and all. */
export function foldersAbove(excluded: string[]): string[] {
  const above = new Set<string>();
  for (const path of excluded) {
    for (let parent = dirname(path); parent !== '.'; parent = dirname(parent)) above.add(parent);
  }
  return [...above].sort();
}
