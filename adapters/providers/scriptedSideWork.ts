import type { SideTaskKind } from '../../domain/index.ts';

/** The prompt's first eight words, capitalised, without closing punctuation. */
function titleFrom(prompt: string): string {
  const title = prompt.split(/\s+/).filter(Boolean).slice(0, 8).join(' ').replace(/[.!?,;:…]+$/u, '');
  return title === '' ? 'Untitled' : `${title[0]!.toUpperCase()}${title.slice(1)}`;
}

const listed = (names: string[]): string => (names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

/** What a unified diff touches, counted from its `diff --git` headers and its added and removed lines. */
function summaryFrom(diff: string): string {
  const files = [...diff.matchAll(/^diff --git a\/.+? b\/(.+)$/gm)].map((match) => match[1]!);
  if (files.length === 0) return 'Changed the work tree';
  const lines = diff.split('\n');
  const added = lines.filter((line) => line.startsWith('+') && !line.startsWith('+++')).length;
  const removed = lines.filter((line) => line.startsWith('-') && !line.startsWith('---')).length;
  return `Changed ${files.length <= 3 ? listed(files) : `${files.length} files`} (+${added} −${removed})`;
}

/** The scripted model's answer to a side call its script has no entry for: made from the call's input, so the same input always gets the same line. */
export function scriptedSideAnswer(kind: SideTaskKind, input: string): string {
  return kind === 'title' ? titleFrom(input) : summaryFrom(input);
}
