import type { CheckpointDiff, FileChange } from '../../domain/index.ts';

/** One file's piece of a unified diff, found by its `diff --git` header; `null` when the cut patch does not reach it. */
export function patchOfFile(diff: CheckpointDiff, file: FileChange): string | null {
  const header = `diff --git a/${file.oldPath ?? file.path} b/${file.path}\n`;
  const start = diff.patch.startsWith(header) ? 0 : diff.patch.indexOf(`\n${header}`) + 1;
  if (start === 0 && !diff.patch.startsWith(header)) return null;
  const next = diff.patch.indexOf('\ndiff --git ', start + header.length);
  return diff.patch.slice(start, next < 0 ? undefined : next + 1);
}
