import { lstat, open, realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative, sep } from 'node:path';
import type { InstructionsFile } from '../../domain/index.ts';

/** Most of one file the model is given, and of all of them together. */
export const INSTRUCTIONS_LIMITS = { perFile: 16 * 1024, total: 32 * 1024 };

/** In each folder, the first of these that exists is read. */
const NAMES = ['AGENTS.md', 'CLAUDE.md'];

/**
 * A regular file's text, at most `limit` bytes of it. A symbolic link is not
 * followed: the workspace is the model's to write, and a link would let it
 * put any file this process can read (a key, our own data) into the prompt.
 */
async function readBounded(path: string, limit: number): Promise<{ text: string; cut: boolean; size: number } | null> {
  const stat = await lstat(path).catch(() => null);
  if (!stat?.isFile()) return null;
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.min(limit, stat.size));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    // A cut may fall inside a character: the decoder's replacement at the end is dropped.
    const text = buffer.subarray(0, bytesRead).toString('utf8').replace(/\uFFFD+$/, '');
    return { text, cut: stat.size > bytesRead, size: stat.size };
  } finally {
    await handle.close();
  }
}

/** The folders from `top` down to `workspace`, `top` first; only `workspace` when it is not inside `top`. */
function foldersDown(top: string, workspace: string): string[] {
  const rel = relative(top, workspace);
  if (rel.startsWith('..') || rel === '') return [workspace];
  const folders = [top];
  let at = top;
  for (const piece of rel.split(sep)) folders.push((at = join(at, piece)));
  return folders;
}

/**
 * The project instructions for a workspace: AGENTS.md (CLAUDE.md where a
 * folder has no AGENTS.md) in each folder from the repository root down to
 * the workspace, then the user's own file; bounded, each cut one saying so.
 */
export async function projectInstructions(options: { workspace: string; repositoryRoot: string | null; userFile: string | null }): Promise<InstructionsFile[]> {
  const workspace = await realpath(options.workspace);
  const top = options.repositoryRoot ? await realpath(options.repositoryRoot).catch(() => workspace) : workspace;
  const candidates: Array<{ path: string; shown: string }> = [];
  for (const folder of foldersDown(top, workspace)) {
    for (const name of NAMES) {
      const path = join(folder, name);
      if ((await lstat(path).catch(() => null))?.isFile()) {
        candidates.push({ path, shown: relative(workspace, path).split(sep).join('/') || name });
        break;
      }
    }
  }
  if (options.userFile) candidates.push({ path: options.userFile, shown: options.userFile.startsWith(`${homedir()}${sep}`) ? `~${options.userFile.slice(homedir().length)}` : options.userFile });
  const files: InstructionsFile[] = [];
  let left = INSTRUCTIONS_LIMITS.total;
  for (const candidate of candidates) {
    if (left <= 0) break;
    const read = await readBounded(candidate.path, Math.min(INSTRUCTIONS_LIMITS.perFile, left)).catch(() => null);
    if (!read) continue;
    left -= Buffer.byteLength(read.text);
    const note = read.cut ? `\n[cut: ${candidate.shown} is ${read.size} bytes; only its first ${Buffer.byteLength(read.text)} are given]` : '';
    files.push({ path: candidate.shown, text: read.text + note, cut: read.cut });
  }
  return files;
}
