import type { FileChange } from '../../domain/index.ts';

/** The arguments that make `git diff` print what parseFileChanges reads. */
export const fileChangeArgs = ['--raw', '--numstat', '-z'];

const statuses: Record<string, FileChange['status']> = { A: 'added', D: 'deleted', R: 'renamed' };

/**
 * Reads `git diff --raw --numstat -z`: raw records (`:modes oids status\0path\0[path\0]`) give the status,
 * numstat records (`adds\tdels\tpath\0` or `adds\tdels\t\0old\0new\0`) the line counts; `-` counts mean binary.
 * NUL separation keeps any file name (tabs, newlines, quotes) intact.
 */
export function parseFileChanges(output: string): FileChange[] {
  const fields = output.split('\0');
  const changes: FileChange[] = [];
  const byPath = new Map<string, FileChange>();
  let at = 0;
  const next = () => fields[at++] ?? '';
  while (at < fields.length) {
    const field = next();
    if (field === '') continue;
    if (field.startsWith(':')) {
      const letter = field.slice(field.lastIndexOf(' ') + 1, field.lastIndexOf(' ') + 2);
      const status = statuses[letter] ?? 'modified';
      const first = next();
      const change: FileChange =
        letter === 'R'
          ? { path: next(), oldPath: first, status, additions: 0, deletions: 0, binary: false }
          : { path: first, status, additions: 0, deletions: 0, binary: false };
      changes.push(change);
      byPath.set(change.path, change);
      continue;
    }
    const firstTab = field.indexOf('\t');
    const secondTab = field.indexOf('\t', firstTab + 1);
    const additions = field.slice(0, firstTab);
    const deletions = field.slice(firstTab + 1, secondTab);
    let path = field.slice(secondTab + 1);
    if (path === '') {
      next();
      path = next();
    }
    const change = byPath.get(path);
    if (change === undefined) continue;
    change.binary = additions === '-';
    change.additions = change.binary ? 0 : Number(additions);
    change.deletions = change.binary ? 0 : Number(deletions);
  }
  return changes;
}
