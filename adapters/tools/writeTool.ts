import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { defineTool } from './toolDefinition.ts';

const input = z
  .object({
    path: z.string().min(1).describe('The file to write, relative to the workspace root; missing folders are created.'),
    content: z.string().describe('The whole new content of the file.'),
  })
  .strict();

export const writeTool = defineTool({
  name: 'write',
  description: 'Create a file, or replace all of its content.',
  kind: 'edit',
  input,
  subject: ({ path: file }, workspace) => workspace.subject(file),
  async run({ path: file, content }, { workspace, signal }) {
    const target = await workspace.resolveWritable(file);
    await mkdir(path.dirname(target.real), { recursive: true });
    await writeFile(target.real, content, { signal });
    return `wrote ${Buffer.byteLength(content)} bytes to ${target.relative}`;
  },
});
