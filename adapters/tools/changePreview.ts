import { constants } from 'node:fs';
import { structuredPatch } from 'diff';
import { type ApprovalPreview, MAX_PREVIEW_PATCH_CHARS } from '../../domain/index.ts';
import { openRegularFile } from './regularFile.ts';
import { ToolError } from './toolError.ts';
import type { WorkspacePath } from './workspacePath.ts';

/** A file larger than this is not read to preview a change to it: the question says so instead. */
const MAX_PREVIEWED_FILE_BYTES = 1024 * 1024;

/**
 * The file's text as it is now, for a preview (`null`: there is none yet).
 * Read-only and bounded; whatever the change itself would refuse (a FIFO, a
 * directory) is refused here by the same open.
 */
export async function currentText(target: WorkspacePath): Promise<string | null> {
  const opened = await openRegularFile(target.real, target.relative, constants.O_RDONLY).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (opened === null) return null;
  try {
    if (opened.stats.size > MAX_PREVIEWED_FILE_BYTES) throw new ToolError(`${target.relative} is ${opened.stats.size} bytes, too large to show its diff`);
    const bytes = await opened.handle.readFile();
    if (bytes.includes(0)) throw new ToolError(`${target.relative} is a binary file`);
    return bytes.toString('utf8');
  } finally {
    await opened.handle.close();
  }
}

/** An empty range is named by the line before it, as `diff -u` and git write it (`@@ -0,0 +1,3 @@` for a new file). */
const rangeStart = (start: number, count: number) => (count === 0 ? start - 1 : start);

/** The change from `before` (`null`: no file yet) to `after` as a bounded unified diff with its counts. */
export function diffPreview(relative: string, before: string | null, after: string): ApprovalPreview {
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
  return { kind: 'diff', path: relative, patch: text, additions, deletions, created: before === null, cut };
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
