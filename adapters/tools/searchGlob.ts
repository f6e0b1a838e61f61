/**
 * The longest glob taken. ripgrep matches globs in linear time (it compiles
 * them to a regex for its own engine, which never backtracks), but the
 * compiled size grows with the glob's length, and so does every path's cost.
 */
export const maxGlobChars = 1_000;

/** The positions of the `{` and `}` that pair up; any other brace is an ordinary character. */
function pairedBraces(glob: string): Set<number> {
  const paired = new Set<number>();
  const open: number[] = [];
  for (let at = 0; at < glob.length; at += 1) {
    if (glob[at] === '{') open.push(at);
    else if (glob[at] === '}' && open.length > 0) paired.add(open.pop()!).add(at);
  }
  return paired;
}

/**
 * Characters ripgrep reads as more than themselves where the tools' globs do
 * not: brackets and the backslash in the glob, and, because it reads `--glob`
 * as a line of a `.gitignore`, `#` (a comment), `!` (a negation) and spaces
 * (trailing ones are dropped).
 */
const alwaysLiteral = new Set(['[', ']', '\\', '#', '!', ' ']);

/**
 * A glob of the tools' syntax in ripgrep's. The tools' globs have `**`,
 * `*`, `?` and `{a,b}`, and nothing else is special: brackets are literal
 * (so `app/[id]/page.tsx` is written as it is), and so are a backslash and
 * a brace that pairs with none. `anchored` matches the whole path from the
 * search's folder; otherwise a glob without a `/` is tested on the name
 * (anywhere below) and one with a `/` on the path, as ripgrep's `--glob`
 * does, and a leading `!` excludes what matches.
 */
export function ripgrepGlob(glob: string, { anchored }: { anchored: boolean }): string {
  const excluded = !anchored && glob.startsWith('!');
  const body = excluded ? glob.slice(1) : glob;
  // `./x` and `/x` are the path x from the search's folder; ripgrep reads a leading `/` so.
  const rooted = /^\.?\//.test(body) || anchored;
  const bare = body.replace(/^\.?\//, '');
  const paired = pairedBraces(bare);
  let escaped = '';
  for (let at = 0; at < bare.length; at += 1) {
    const char = bare[at]!;
    const literal = alwaysLiteral.has(char) || ((char === '{' || char === '}') && !paired.has(at));
    escaped += literal ? `\\${char}` : char;
  }
  return `${excluded ? '!' : ''}${rooted ? '/' : ''}${escaped}`;
}
