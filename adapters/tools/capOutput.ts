const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/** The first `chars` characters of `text`, one fewer if the cut would split a surrogate pair. */
export function headOf(text: string, chars: number): string {
  return text.slice(0, isHighSurrogate(text.charCodeAt(chars - 1)) ? chars - 1 : chars);
}

const cutNote = (cut: number): string => `\n[... ${cut} characters cut ...]\n`;

/**
 * A text `totalChars` long, of which only `head` (its start) and `tail` (its
 * end) may still be at hand, cut to `maxChars`: both ends are kept, since an
 * error usually shows at the end and its cause at the start.
 */
export function keepEnds(head: string, tail: string, totalChars: number, maxChars: number): string {
  // The note for the whole length is at least as long as the real one, so the result stays within maxChars.
  const budget = Math.max(0, maxChars - cutNote(totalChars).length);
  const kept = headOf(head, Math.min(head.length, Math.ceil(budget / 2)));
  let tailChars = Math.min(tail.length, budget - kept.length);
  if (isLowSurrogate(tail.charCodeAt(tail.length - tailChars))) tailChars -= 1;
  const end = tail.slice(tail.length - tailChars);
  return kept + cutNote(totalChars - kept.length - end.length) + end;
}

/** `text`, or its start and end with a note saying how much of the middle was cut when it is over `maxChars`. */
export function capOutput(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : keepEnds(text, text, text.length, maxChars);
}

/**
 * Output arriving in chunks, of which only the first and last `keep`
 * characters are held: a command may print far more than memory should take.
 */
export class CappedOutput {
  private head = '';
  private tail = '';
  private total = 0;
  private readonly keep: number;

  constructor(keep: number) {
    this.keep = Math.max(1, keep);
  }

  push(chunk: string): void {
    this.total += chunk.length;
    const room = this.keep - this.head.length;
    const rest = room > 0 ? chunk.slice(room) : chunk;
    if (room > 0) this.head += chunk.slice(0, room);
    if (rest !== '') this.tail = (this.tail + rest).slice(-this.keep);
  }

  text(maxChars: number): string {
    const whole = this.head.length + this.tail.length === this.total;
    return whole ? capOutput(this.head + this.tail, maxChars) : keepEnds(this.head, this.tail, this.total, maxChars);
  }
}
