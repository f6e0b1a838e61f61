import path from 'node:path';
import { globMatcher } from './globPattern.ts';
import type { GrepFound, GrepMatch, GrepQuery } from './grepQuery.ts';
import { readRegularFile } from './regularFile.ts';
import { ToolError } from './toolError.ts';
import { walkFiles } from './walkFiles.ts';

function compile(pattern: string, ignoreCase: boolean): RegExp {
  try {
    return new RegExp(pattern, ignoreCase ? 'i' : '');
  } catch (error) {
    throw new ToolError(`invalid regex: ${(error as Error).message}`);
  }
}

/** Whether a file found under the searched folder passes the glob, the way ripgrep's `--glob` decides. */
function globFilter(glob: string | null): (relative: string) => boolean {
  if (glob === null) return () => true;
  const negated = glob.startsWith('!');
  const matches = globMatcher(negated ? glob.slice(1) : glob);
  const onPath = glob.includes('/');
  return (relative) => matches(onPath ? relative : path.basename(relative)) !== negated;
}

async function* filesOf(query: GrepQuery): AsyncGenerator<{ real: string; shown: string }> {
  if (!query.isFolder) {
    yield { real: query.real, shown: query.relative };
    return;
  }
  const passes = globFilter(query.glob);
  for await (const real of walkFiles(query.real, query.signal)) {
    const relative = path.relative(query.real, real);
    if (passes(relative)) yield { real, shown: path.join(query.relative, relative) };
  }
}

/** Grep without ripgrep: slower, the same results (on the files ripgrep would search, with the regexes both understand). */
export async function grepFallback(query: GrepQuery): Promise<GrepFound> {
  const regex = compile(query.pattern, query.ignoreCase);
  const matches: GrepMatch[] = [];
  for await (const file of filesOf(query)) {
    // A file that cannot be read (gone meanwhile, no regular file any more, too big for a string) is passed over, as ripgrep passes it.
    const content = await readRegularFile(file.real, query.signal).catch((error: unknown) => {
      if (query.signal.aborted) throw error;
      return null;
    });
    if (content === null || content.includes(0)) continue;
    const lines = content.toString('utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    for (const [index, text] of lines.entries()) {
      if (!regex.test(text)) continue;
      if (matches.length === query.limit) return { matches, more: true };
      matches.push({ path: file.shown, line: index + 1, text });
    }
  }
  return { matches, more: false };
}
