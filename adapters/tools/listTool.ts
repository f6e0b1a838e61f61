import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { defineTool } from './toolDefinition.ts';

const input = z
  .object({
    path: z.string().min(1).optional().describe('The folder to list, relative to the workspace root; the root when left out.'),
  })
  .strict();

const maxEntries = 1_000;

export const listTool = defineTool({
  name: 'list',
  description: 'List a folder: its entries sorted by name, folders ending in `/`; `.git` is left out.',
  kind: 'read',
  input,
  subject: ({ path: folder = '.' }, workspace) => workspace.subject(folder),
  async run({ path: folder = '.' }, { workspace }) {
    const target = await workspace.resolve(folder);
    const entries = (await readdir(target.real, { withFileTypes: true })).filter((entry) => entry.name !== '.git');
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const shown = await Promise.all(
      entries.slice(0, maxEntries).map(async (entry) => {
        // A symlink to a folder is listed as one, so the model knows it can be listed in turn.
        const isFolder = entry.isDirectory() || (entry.isSymbolicLink() && (await stat(path.join(target.real, entry.name)).catch(() => null))?.isDirectory());
        return isFolder ? `${entry.name}/` : entry.name;
      }),
    );
    if (shown.length === 0) return `(${target.relative} is empty)`;
    const more = entries.length - shown.length;
    return shown.join('\n') + (more > 0 ? `\n[... ${more} more entries]` : '');
  },
});
