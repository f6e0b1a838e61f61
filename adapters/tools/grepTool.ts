import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { headOf } from './capOutput.ts';
import type { GrepMatch, GrepQuery } from './grepQuery.ts';
import { grepSearch } from './grepSearch.ts';
import { notRegularFile } from './regularFile.ts';
import { missingRipgrep } from './ripgrep.ts';
import { maxGlobChars } from './searchGlob.ts';
import { defineTool } from './toolDefinition.ts';

const input = z
  .object({
    pattern: z.string().min(1).describe('A regular expression (ripgrep\'s syntax: no look-around or backreferences), matched against each line.'),
    path: z.string().min(1).optional().describe('The file or folder to search, relative to the workspace root; the root when left out.'),
    glob: z.string().min(1).max(maxGlobChars).optional().describe('Search only files whose name matches this glob (`*.ts`), or whose path does when it has a `/` (`src/**/*.ts`); `!` first searches all but those (`!*.min.js`). in the syntax of glob\'s pattern.'),
    ignoreCase: z.boolean().optional().describe('Match regardless of case.'),
  })
  .strict();

const maxMatches = 500;
/** Minified files have lines of megabytes; one match should not fill the output. */
const maxLineChars = 500;

function format({ path, line, text }: GrepMatch): string {
  const shown = text.length > maxLineChars ? `${headOf(text, maxLineChars)} [... line cut]` : text;
  return `${path}:${line}:${shown}`;
}

export const grepTool = defineTool({
  name: 'grep',
  description:
    'Search file contents for a regular expression; prints `path:line:text` for each matching line. Files that .gitignore or .ignore leave out are skipped, as ripgrep skips them (name one as `path` to search it), and so are `.git`, `node_modules` and binary files.',
  kind: 'read',
  input,
  subject: ({ path = '.' }, workspace) => workspace.subject(path),
  async run({ pattern, path = '.', glob, ignoreCase = false }, { workspace, signal, ripgrep }) {
    const target = await workspace.resolve(path);
    const stats = await stat(target.real);
    const isFolder = stats.isDirectory();
    // A FIFO, socket or device named outright would be read without end (a folder's walk passes over them).
    if (!isFolder && !stats.isFile()) throw notRegularFile(target.relative);
    const query: GrepQuery = { pattern, ignoreCase, glob: glob ?? null, real: target.real, relative: target.relative, isFolder, limit: maxMatches, signal };
    if (ripgrep === null) throw missingRipgrep('grep');
    const { matches, more, binary } = await grepSearch(ripgrep, query);
    if (binary !== null) return `${target.relative} is a binary file (a NUL byte at offset ${binary.offset}): it matches, but grep shows lines of text files only`;
    if (matches.length === 0) return 'no matches';
    const lines = matches.map(format);
    return lines.join('\n') + (more ? `\n[stopped at ${maxMatches} matches; narrow the pattern, path or glob]` : '');
  },
});
