import { constants } from 'node:fs';
import { z } from 'zod';
import { assertUnchanged, currentDigest, currentFile, diffPreview } from './changePreview.ts';
import { openFileToChange, replaceContent } from './fileToChange.ts';
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
  async preview({ path: file, content }, workspace) {
    const target = await workspace.resolveWritable(file);
    return diffPreview(target.relative, await currentFile(target), content);
  },
  async run({ path: file, content }, { workspace, approvedDigest }) {
    const target = await workspace.resolveWritable(file);
    // Read before the open, which would make a file that was absent.
    if (approvedDigest !== null) assertUnchanged(target, approvedDigest, await currentDigest(target));
    const handle = await openFileToChange(workspace, target, constants.O_WRONLY | constants.O_CREAT);
    try {
      await replaceContent(handle, content);
    } finally {
      await handle.close();
    }
    return `wrote ${Buffer.byteLength(content)} bytes to ${target.relative}`;
  },
});
