import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { type JSONPath, applyEdits, findNodeAtLocation, modify, parseTree } from 'jsonc-parser';
import { userConfigPath } from '../services/config/index.ts';

/**
 * Sets (or, with `undefined`, removes) one value of the user file and
 * leaves the rest as it was written (order, spacing, comments): the edit
 * is made on the text. The new text replaces the file in one rename, so a
 * reader sees the old file or the new one, never half of it. Returns the
 * file's path.
 */
export function editUserFile(path: JSONPath, value: unknown, env: NodeJS.ProcessEnv = process.env): string {
  const file = userConfigPath(env);
  let text = '{}\n';
  let mode = 0o600;
  try {
    text = readFileSync(file, 'utf8');
    mode = statSync(file).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dirname(file), { recursive: true });
  }
  // Nothing to remove: the file is left as it is.
  if (value === undefined && findNodeAtLocation(parseTree(text) ?? { type: 'null', offset: 0, length: 0 }, path) === undefined) return file;
  const edited = applyEdits(text, modify(text, path, value, { formattingOptions: { insertSpaces: true, tabSize: 2 } }));
  const temporary = join(dirname(file), `.config.json.${randomUUID()}.tmp`);
  writeFileSync(temporary, edited.endsWith('\n') ? edited : `${edited}\n`, { mode });
  renameSync(temporary, file);
  return file;
}
