import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { globMatcher, maxGlobChars } from './globPattern.ts';
import { defineTool } from './toolDefinition.ts';
import { ToolError } from './toolError.ts';
import { walkFiles } from './walkFiles.ts';

const input = z
  .object({
    pattern: z
      .string()
      .min(1)
      .max(maxGlobChars)
      .describe('A glob matched against whole paths relative to `path`: `**` spans folders, `*` and `?` stay within one, `{a,b}` is either (`src/**/*.{ts,tsx}`).'),
    path: z.string().min(1).optional().describe('The folder to search in, relative to the workspace root; the root when left out.'),
  })
  .strict();

const maxPaths = 1_000;

export const globTool = defineTool({
  name: 'glob',
  description: 'Find files by name pattern. Paths are relative to the workspace root, sorted; `.git` and `node_modules` are skipped.',
  kind: 'read',
  input,
  subject: ({ pattern }) => pattern,
  async run({ pattern, path: folder = '.' }, { workspace, signal }) {
    const base = await workspace.resolve(folder);
    if (!(await stat(base.real)).isDirectory()) throw new ToolError(`${base.relative} is not a folder`);
    const matches = globMatcher(pattern);
    const found: string[] = [];
    for await (const file of walkFiles(base.real, signal)) {
      const relative = path.relative(base.real, file);
      if (matches(relative)) found.push(path.join(base.relative, relative));
    }
    if (found.length === 0) return `no files match ${pattern}`;
    found.sort();
    const more = found.length - maxPaths;
    return found.slice(0, maxPaths).join('\n') + (more > 0 ? `\n[... ${more} more paths]` : '');
  },
});
