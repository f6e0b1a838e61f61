/** The index of the `}` closing the `{` at `open`, or -1. */
function closingBrace(glob: string, open: number): number {
  let depth = 0;
  for (let at = open; at < glob.length; at += 1) {
    if (glob[at] === '{') depth += 1;
    else if (glob[at] === '}' && --depth === 0) return at;
  }
  return -1;
}

/** The comma-separated alternatives of a brace's inside, nested braces kept whole. */
function alternatives(inside: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let at = 0; at < inside.length; at += 1) {
    if (inside[at] === '{') depth += 1;
    else if (inside[at] === '}') depth -= 1;
    else if (inside[at] === ',' && depth === 0) {
      parts.push(inside.slice(start, at));
      start = at + 1;
    }
  }
  return [...parts, inside.slice(start)];
}

function translate(glob: string): string {
  let source = '';
  for (let at = 0; at < glob.length; at += 1) {
    const char = glob[at]!;
    if (char === '*' && glob[at + 1] === '*') {
      const wholeSegment = (at === 0 || glob[at - 1] === '/') && glob[at + 2] === '/';
      // `a/**/b` must match `a/b` too: the folders in between may be none.
      source += wholeSegment ? '(?:.*/)?' : '.*';
      at += wholeSegment ? 2 : 1;
    } else if (char === '*') {
      source += '[^/]*';
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '{' && closingBrace(glob, at) !== -1) {
      const close = closingBrace(glob, at);
      source += `(?:${alternatives(glob.slice(at + 1, close)).map(translate).join('|')})`;
      at = close;
    } else {
      source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return source;
}

/**
 * A glob as a RegExp over `/`-separated relative paths: `**` spans folders,
 * `*` and `?` stay within one, `{a,b}` is either. Brackets are literal, so
 * paths like `app/[id]/page.tsx` can be written as they are.
 */
export function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${translate(glob.replace(/^\.?\//, ''))}$`);
}
