import { constants } from 'node:fs';
import { z } from 'zod';
import { assertUnchanged, currentFile, diffPreview, digestOf } from './changePreview.ts';
import { openFileToChange, replaceContent } from './fileToChange.ts';
import { defineTool } from './toolDefinition.ts';
import { ToolError } from './toolError.ts';

const input = z
  .object({
    path: z.string().min(1).describe('The file to edit, relative to the workspace root.'),
    oldText: z.string().min(1).describe('The exact text to replace, whitespace included; it must occur once unless replaceAll is set.'),
    newText: z.string().describe('The text to put in its place.'),
    replaceAll: z.boolean().optional().describe('Replace every occurrence of oldText.'),
  })
  .strict();

function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}

/** The file's text after the edit; a `ToolError` when the edit cannot apply as asked. */
function edited(text: string, shown: string, { oldText, newText, replaceAll = false }: z.output<typeof input>): { text: string; count: number } {
  const count = occurrences(text, oldText);
  if (count === 0) throw new ToolError(`oldText not found in ${shown}`);
  if (count > 1 && !replaceAll) throw new ToolError(`oldText occurs ${count} times in ${shown}; give more context or set replaceAll`);
  // split/join, not String.replace: `$&` and friends in newText must stay literal.
  return { text: text.split(oldText).join(newText), count };
}

export const editTool = defineTool({
  name: 'edit',
  description: 'Replace exact text in a file. oldText must match the file exactly and, unless replaceAll is set, occur only once.',
  kind: 'edit',
  input,
  subject: ({ path }, workspace) => workspace.subject(path),
  async preview(call, workspace) {
    const file = await workspace.resolveWritable(call.path);
    const before = await currentFile(file);
    if (before.text === null) throw new ToolError(`${file.relative} does not exist`);
    return diffPreview(file.relative, before, edited(before.text, file.relative, call).text);
  },
  async run(call, { workspace, signal, approvedDigest }) {
    const file = await workspace.resolveWritable(call.path);
    const handle = await openFileToChange(workspace, file, constants.O_RDWR);
    try {
      const bytes = await handle.readFile({ signal });
      assertUnchanged(file, approvedDigest, digestOf(bytes));
      const { text, count } = edited(bytes.toString('utf8'), file.relative, call);
      await replaceContent(handle, text);
      return `replaced ${count} ${count === 1 ? 'occurrence' : 'occurrences'} in ${file.relative}`;
    } finally {
      await handle.close();
    }
  },
});
