import type { CheckpointDiff, FileChange } from '../../domain/index.ts';

/** One file's piece of a unified diff, found by its `diff --git` header; `null` when the cut patch does not reach it. */
export function patchOfFile(diff: CheckpointDiff, file: FileChange): string | null {
  const header = `diff --git a/${file.oldPath ?? file.path} b/${file.path}\n`;
  // Matched at a line start: a newline in front of the patch makes its first line one too, and shifts nothing.
  const start = `\n${diff.patch}`.indexOf(`\n${header}`);
  if (start < 0) return null;
  const next = diff.patch.indexOf('\ndiff --git ', start + header.length);
  return diff.patch.slice(start, next < 0 ? undefined : next + 1);
}
