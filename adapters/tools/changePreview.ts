import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { structuredPatch } from 'diff';
import { type ApprovalPreview, MAX_PREVIEW_PATCH_CHARS } from '../../domain/index.ts';
import { openRegularFile } from './regularFile.ts';
import { ToolError } from './toolError.ts';
import type { WorkspacePath } from './workspacePath.ts';

/** A file larger than this is not read to preview a change to it: the question says so instead. */
const MAX_PREVIEWED_FILE_BYTES = 1024 * 1024;

/** What a file is, to know later whether it changed: `sha256:<hex>` of its bytes, or `absent` (`null`: there is none). */
export const digestOf = (bytes: Buffer | null): string => (bytes === null ? 'absent' : `sha256:${createHash('sha256').update(bytes).digest('hex')}`);

/** The file as a change to it starts from: its text (`null`: there is none yet) and its digest. */
export interface FileBefore {
  text: string | null;
  digest: string;
}

/** The file opened read-only (`null`: there is none), refused if it is no regular file. */
const openToRead = (target: WorkspacePath) =>
  openRegularFile(target.real, target.relative, constants.O_RDONLY).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });

/**
 * The file as it is now, for a preview. Read-only and bounded; whatever the
 * change itself would refuse (a FIFO, a directory) is refused here by the
 * same open.
 */
export async function currentFile(target: WorkspacePath): Promise<FileBefore> {
  const opened = await openToRead(target);
  if (opened === null) return { text: null, digest: digestOf(null) };
  try {
    if (opened.stats.size > MAX_PREVIEWED_FILE_BYTES) throw new ToolError(`${target.relative} is ${opened.stats.size} bytes, too large to show its diff`);
    const bytes = await opened.handle.readFile();
    if (bytes.includes(0)) throw new ToolError(`${target.relative} is a binary file`);
    return { text: bytes.toString('utf8'), digest: digestOf(bytes) };
  } finally {
    await opened.handle.close();
  }
}

/** The file's digest as it is now, read whole (`absent`: there is none). */
export async function currentDigest(target: WorkspacePath): Promise<string> {
  const opened = await openToRead(target);
  if (opened === null) return digestOf(null);
  try {
    return digestOf(await opened.handle.readFile());
  } finally {
    await opened.handle.close();
  }
}

/**
 * Refuses an approved change when the file is no longer what its diff was
 * made from (`approved`: the digest the person was shown; `null`: the call
 * was not allowed from a diff, and nothing is checked): a person's edit made
 * while the question waited is never overwritten.
 */
export function assertUnchanged(target: WorkspacePath, approved: string | null, digest: string): void {
  if (approved !== null && approved !== digest) {
    throw new ToolError(`${target.relative} changed after the approval was asked (the diff shown is no longer what the call would do); read it again and redo the change`);
  }
}

/** An empty range is named by the line before it, as `diff -u` and git write it (`@@ -0,0 +1,3 @@` for a new file). */
const rangeStart = (start: number, count: number) => (count === 0 ? start - 1 : start);

/** The change from `before` (its text `null`: no file yet) to `after` as a bounded unified diff with its counts, bound to `before`'s digest. */
export function diffPreview(relative: string, { text: before, digest }: FileBefore, after: string): ApprovalPreview {
  const patch = structuredPatch(`a/${relative}`, `b/${relative}`, before ?? '', after, '', '', { context: 3 });
  const lines = [`--- ${before === null ? '/dev/null' : `a/${relative}`}`, `+++ b/${relative}`];
  let additions = 0;
  let deletions = 0;
  for (const hunk of patch.hunks) {
    lines.push(`@@ -${rangeStart(hunk.oldStart, hunk.oldLines)},${hunk.oldLines} +${rangeStart(hunk.newStart, hunk.newLines)},${hunk.newLines} @@`);
    for (const line of hunk.lines) {
      if (line.startsWith('+')) additions += 1;
      else if (line.startsWith('-')) deletions += 1;
      lines.push(line);
    }
  }
  const { text, cut } = cutAtLine(lines, MAX_PREVIEW_PATCH_CHARS);
  return { kind: 'diff', path: relative, patch: text, additions, deletions, created: before === null, cut, digest };
}

/** The first whole lines within `max` characters, and a last line saying how many were left out. */
function cutAtLine(lines: string[], max: number): { text: string; cut: boolean } {
  let size = 0;
  let kept = 0;
  for (const line of lines) {
    if (size + line.length + 1 > max) break;
    size += line.length + 1;
    kept += 1;
  }
  if (kept === lines.length) return { text: lines.join('\n'), cut: false };
  return { text: `${lines.slice(0, kept).join('\n')}\n… ${lines.length - kept} more lines of the diff not shown`, cut: true };
}
