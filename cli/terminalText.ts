/**
 * Characters a terminal acts on rather than shows: C0 controls (all but tab
 * and newline, so a carriage return cannot redraw a line either), DEL, C1
 * controls (U+009B is a CSI of its own), and the bidirectional controls that
 * reorder what is shown (U+202E makes `txt.exe` read `exe.txt`).
 */
const actsOnTerminal = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text from outside turnloom (the model, a tool's output, a file name, a
 * provider's error) as a terminal may print it: every control is shown
 * instead of obeyed — C0 and DEL in caret notation (`^[`, `^M`, `^?`), the
 * rest as `<U+202E>` — so nothing it holds can move the cursor, redraw a
 * prompt, set the title or the clipboard, or reorder a line.
 */
export function visible(text: string): string {
  return text.replace(actsOnTerminal, (char) => {
    const code = char.charCodeAt(0);
    if (code < 0x20) return `^${String.fromCharCode(code + 0x40)}`;
    if (code === 0x7f) return '^?';
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}

/** What JSON.stringify leaves raw among the characters above: inside a string, each can be written as its `\uXXXX` escape instead. */
const rawInJson = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `value` as JSON a terminal can print safely and a program reads
 * back exactly: the controls JSON.stringify leaves raw are escaped.
 */
export function terminalJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(rawInJson, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `text` cut to at most `max` characters, an ellipsis saying so (for one line of a list). */
export const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
