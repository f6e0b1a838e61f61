import { type Ripgrep, alwaysSkipped, ripgrepRecords, searchFlags } from './ripgrep.ts';

/** `rg --files` in `folder`: its files as ripgrep prints them (`./a/b.ts`), in walk order, with `glob` given to ripgrep as `--glob`. */
function listing(rg: Ripgrep, folder: string, glob: string | null, signal: AbortSignal): AsyncGenerator<string> {
  const args = [...searchFlags, '--files', '--null', ...(glob === null ? [] : ['--glob', glob]), ...alwaysSkipped, '--', '.'];
  return ripgrepRecords({ rg, args, cwd: folder, signal, separator: '\0', glob });
}

async function collect(records: AsyncGenerator<string>): Promise<string[]> {
  const all: string[] = [];
  for await (const record of records) all.push(record);
  return all;
}

/** The files a search of `folder` goes through: none that an ignore file leaves out, nor `.git` or `node_modules`. */
export async function searchedFiles(rg: Ripgrep, folder: string, signal: AbortSignal): Promise<Set<string>> {
  return new Set(await collect(listing(rg, folder, null, signal)));
}

/**
 * The files under `folder` that `glob` (ripgrep's syntax, see
 * `ripgrepGlob`) matches and a search goes through, in walk order.
 * ripgrep lets a `--glob` override the ignore files (a file that
 * `.gitignore` names comes back when the glob names it too; only the
 * folders they leave out stay out, not being walked), so what it lists with
 * the glob is kept only where the listing without it has it too. Both run
 * at once, each walking in a process of its own.
 */
export async function filesMatching(rg: Ripgrep, folder: string, glob: string, signal: AbortSignal): Promise<string[]> {
  const [matching, searched] = await Promise.all([collect(listing(rg, folder, glob, signal)), searchedFiles(rg, folder, signal)]);
  return matching.filter((file) => searched.has(file));
}
