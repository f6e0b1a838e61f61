import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { headOf } from './capOutput.ts';
import { maxGlobChars } from './globPattern.ts';
import { grepFallback } from './grepFallback.ts';
import type { GrepMatch, GrepQuery } from './grepQuery.ts';
import { notRegularFile } from './regularFile.ts';
import { ripgrepSearch } from './ripgrep.ts';
import { defineTool } from './toolDefinition.ts';

const input = z
  .object({
    pattern: z.string().min(1).describe('A regular expression, matched against each line.'),
    path: z.string().min(1).optional().describe('The file or folder to search, relative to the workspace root; the root when left out.'),
    glob: z.string().min(1).max(maxGlobChars).optional().describe('Search only files whose name matches this glob (`*.ts`), or whose path does when it has a `/` (`src/**/*.ts`).'),
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
  description: 'Search file contents for a regular expression; prints `path:line:text` for each matching line. `.git`, `node_modules` and binary files are skipped.',
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
    const { matches, more } = ripgrep === null ? await grepFallback(query) : await ripgrepSearch(ripgrep, query);
    if (matches.length === 0) return 'no matches';
    const lines = matches.map(format);
    return lines.join('\n') + (more ? `\n[stopped at ${maxMatches} matches; narrow the pattern, path or glob]` : '');
  },
});
