import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { missingRipgrep } from './ripgrep.ts';
import { filesMatching } from './searchedFiles.ts';
import { maxGlobChars, ripgrepGlob } from './searchGlob.ts';
import { defineTool } from './toolDefinition.ts';
import { ToolError } from './toolError.ts';

const input = z
  .object({
    pattern: z
      .string()
      .min(1)
      .max(maxGlobChars)
      .describe('A glob matched against whole paths relative to `path`: `**` spans folders, `*` and `?` stay within one, `{a,b}` is either (`src/**/*.{ts,tsx}`); brackets and other characters are literal.'),
    path: z.string().min(1).optional().describe('The folder to search in, relative to the workspace root; the root when left out.'),
  })
  .strict();

const maxPaths = 1_000;

export const globTool = defineTool({
  name: 'glob',
  description:
    'Find files by name pattern. Paths are relative to the workspace root, in walk order (each folder\'s entries by name). Files that .gitignore or .ignore leave out are skipped, as ripgrep skips them (read them by path), and so are `.git` and `node_modules`.',
  kind: 'read',
  input,
  subject: ({ pattern }) => pattern,
  async run({ pattern, path: folder = '.' }, { workspace, signal, ripgrep }) {
    const base = await workspace.resolve(folder);
    if (!(await stat(base.real)).isDirectory()) throw new ToolError(`${base.relative} is not a folder`);
    if (ripgrep === null) throw missingRipgrep('glob');
    const found = await filesMatching(ripgrep, base.real, ripgrepGlob(pattern, { anchored: true }), signal);
    if (found.length === 0) return `no files match ${pattern}`;
    const more = found.length - maxPaths;
    const shown = found.slice(0, maxPaths).map((file) => path.join(base.relative, file));
    return shown.join('\n') + (more > 0 ? `\n[... ${more} more paths]` : '');
  },
});
