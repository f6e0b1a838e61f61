import path from 'node:path';
import type { GrepFound, GrepMatch, GrepQuery } from './grepQuery.ts';
import { type Ripgrep, alwaysSkipped, ripgrepRecords, searchFlags } from './ripgrep.ts';
import { ripgrepGlob } from './searchGlob.ts';
import { searchedFiles } from './searchedFiles.ts';

/** A path or line in ripgrep's JSON: text, or base64 bytes where it is not UTF-8 (shown as UTF-8 then, with U+FFFD where it fails). */
type Data = { text: string } | { bytes: string };
const textOf = (data: Data): string => ('text' in data ? data.text : Buffer.from(data.bytes, 'base64').toString('utf8'));

type Message =
  | { type: 'begin'; data: { path: Data } }
  | { type: 'match'; data: { path: Data; lines: Data; line_number: number } }
  | { type: 'end'; data: { path: Data; binary_offset: number | null } }
  | { type: 'context' | 'summary' };

/**
 * Grep with ripgrep, run where the search starts (the folder, or the file's
 * folder) so the paths it prints and its globs are relative to that. Its
 * JSON output is read, so no character of a file name can confuse the
 * parse. Binary files (a NUL byte: ripgrep stops reading a file it walks
 * there, and reads on through one named outright) show no lines: a file's
 * lines count once its end says it had none. The search ends at the limit.
 */
export async function grepSearch(rg: Ripgrep, query: GrepQuery): Promise<GrepFound> {
  const glob = query.isFolder && query.glob !== null ? ripgrepGlob(query.glob, { anchored: false }) : null;
  // A glob that picks files overrides the ignore files in ripgrep: what it brings back is dropped here.
  const searched = glob !== null && !glob.startsWith('!') ? await searchedFiles(rg, query.real, query.signal) : null;
  const args = [
    ...searchFlags,
    '--json',
    ...(query.ignoreCase ? ['--ignore-case'] : []),
    ...(glob !== null ? ['--glob', glob] : []),
    ...alwaysSkipped,
    '--regexp',
    query.pattern,
    '--',
    query.isFolder ? '.' : path.basename(query.real),
  ];
  const matches: GrepMatch[] = [];
  let file: GrepMatch[] = [];
  let skipped = false;
  for await (const record of ripgrepRecords({ rg, args, cwd: query.isFolder ? query.real : path.dirname(query.real), signal: query.signal, separator: '\n', glob })) {
    const message = JSON.parse(record) as Message;
    if (message.type === 'begin') {
      file = [];
      skipped = searched !== null && !searched.has(textOf(message.data.path));
    } else if (message.type === 'match' && !skipped) {
      const text = textOf(message.data.lines);
      file.push({
        path: query.isFolder ? path.join(query.relative, textOf(message.data.path)) : query.relative,
        line: message.data.line_number,
        text: text.endsWith('\n') ? text.slice(0, -1) : text,
      });
      // Past the limit the file's end is not waited for: its lines so far had no NUL.
      if (matches.length + file.length > query.limit) return { matches: [...matches, ...file].slice(0, query.limit), more: true, binary: null };
    } else if (message.type === 'end' && !skipped) {
      if (message.data.binary_offset === null) matches.push(...file);
      else if (!query.isFolder && file.length > 0) return { matches: [], more: false, binary: { offset: message.data.binary_offset } };
    }
  }
  return { matches, more: false, binary: null };
}
