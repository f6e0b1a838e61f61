import { type Paint, paintPatch } from '../colours.ts';
import { visible } from '../terminalText.ts';
import type { RunReport } from './embeddedRun.ts';
import { failureHint } from './failureHint.ts';

/** What `--json` (of run and demo) says of a checkpoint's changes: the totals, and the files listed. */
export const changesOf = ({ files, filesChanged, additions, deletions, filesOmitted }: NonNullable<RunReport['checkpoint']>) => ({ files, filesChanged, additions, deletions, filesOmitted });

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** A terminal shows this many changed files; the totals count them all. */
const MAX_PRINTED_FILES = 50;
/** The turn's diff is printed up to this many lines; `--json` has the whole patch. */
const MAX_PRINTED_DIFF_LINES = 400;

/**
 * How a run ends on a terminal: the status, why it failed, the title, the
 * files the turn changed with their counts (always), then its diff (unless
 * `diff` is off). Text from outside (titles, paths, the patch) is made safe to print.
 */
export function summaryLines(report: RunReport, colours: Paint, options: { diff: boolean }): string[] {
  const status = report.status === 'completed' ? colours.ok(report.status) : colours.failed(report.status);
  const lines = [`\n${colours.strong('turn')} ${status} · thread ${report.threadId} · ${report.toolCalls.length} tool calls · ${report.usage.input} in / ${report.usage.output} out tokens`];
  if (report.failure) {
    const { kind, message, status: http } = report.failure;
    const hint = failureHint(report.failure);
    lines.push(colours.failed(`error: ${kind}${http === null ? '' : ` (HTTP ${http})`}: ${visible(message)}`) + (hint ? `\n  ${hint}` : ''));
  }
  lines.push(`title: ${visible(report.title)}`);
  const { checkpoint } = report;
  if (!checkpoint) return lines;
  lines.push(
    checkpoint.filesChanged === 0
      ? `checkpoint ${checkpoint.id}: no file changed`
      : `checkpoint ${checkpoint.id}: ${plural(checkpoint.filesChanged, 'file')} changed, ${colours.added(`+${checkpoint.additions}`)} ${colours.removed(`−${checkpoint.deletions}`)}`,
  );
  const printed = checkpoint.files.slice(0, MAX_PRINTED_FILES);
  for (const file of printed) lines.push(`  ${file.status.padEnd(8)} ${visible(file.path)}  ${colours.added(`+${file.additions}`)} ${colours.removed(`−${file.deletions}`)}`);
  if (checkpoint.filesChanged > printed.length) lines.push(`  … and ${plural(checkpoint.filesChanged - printed.length, 'more file')} not listed`);
  if (checkpoint.summary) lines.push(`summary: ${visible(checkpoint.summary)}`);
  if (options.diff && checkpoint.patch !== '') {
    const patch = checkpoint.patch.replace(/\n$/, '').split('\n');
    lines.push('', ...paintPatch(patch.slice(0, MAX_PRINTED_DIFF_LINES).map(visible), colours));
    if (patch.length > MAX_PRINTED_DIFF_LINES) lines.push(colours.dim(`… ${patch.length - MAX_PRINTED_DIFF_LINES} more lines of the diff (--json has it whole)`));
  }
  return lines;
}
