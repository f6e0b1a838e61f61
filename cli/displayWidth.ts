import stringWidth from 'string-width';

/** Characters as a person sees them: an emoji with its modifiers, a letter with its accents, is one. */
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** How many terminal columns `text` takes: East Asian wide characters and most emoji take two, combining marks none. */
export const displayWidth = (text: string): number => stringWidth(text);

/**
 * `text` in at most `columns` columns: when wider, its start up to a whole
 * character, and `…`. A wide character that would straddle the edge is left
 * out rather than split.
 */
export function cutToWidth(text: string, columns: number): string {
  if (stringWidth(text) <= columns) return text;
  return `${fitted([...graphemes.segment(text)].map(({ segment }) => segment), columns - 1).join('')}…`;
}

/** `text` in at most `columns` columns: when wider, `…` and its end (what was typed last). */
export function tailToWidth(text: string, columns: number): string {
  if (stringWidth(text) <= columns) return text;
  return `…${fitted([...graphemes.segment(text)].map(({ segment }) => segment).reverse(), columns - 1).reverse().join('')}`;
}

/** The first of `pieces` that fit in `columns` together. */
function fitted(pieces: string[], columns: number): string[] {
  const kept: string[] = [];
  let width = 0;
  for (const piece of pieces) {
    const next = width + stringWidth(piece);
    if (next > columns) break;
    kept.push(piece);
    width = next;
  }
  return kept;
}
