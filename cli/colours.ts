import { styleText } from 'node:util';

/**
 * Whether a stream gets colour: `FORCE_COLOR` (any value but `0`) says yes,
 * `NO_COLOR` (any non-empty value) says no, else a terminal that is not dumb does.
 */
export function wantsColour(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

type Style = Parameters<typeof styleText>[0];

/** The few styles a run uses, by what they mean; each leaves text as it is when colour is off. */
export interface Paint {
  ok(text: string): string;
  failed(text: string): string;
  asks(text: string): string;
  dim(text: string): string;
  strong(text: string): string;
  added(text: string): string;
  removed(text: string): string;
  hunk(text: string): string;
}

export function paint(colour: boolean): Paint {
  // The decision is ours (see `wantsColour`): styleText must not second-guess it from process.stdout (which under CI=true says no colour).
  const style = (format: Style) => (colour ? (text: string) => styleText(format, text, { validateStream: false }) : (text: string) => text);
  return {
    ok: style('green'),
    failed: style('red'),
    asks: style('yellow'),
    dim: style('dim'),
    strong: style('bold'),
    added: style('green'),
    removed: style('red'),
    hunk: style('cyan'),
  };
}

/** A unified diff's lines, each coloured by what it is; the text itself is made safe to print by the caller. */
export function paintPatch(lines: readonly string[], colours: Paint): string[] {
  return lines.map((line) => {
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ')) return colours.strong(line);
    if (line.startsWith('@@')) return colours.hunk(line);
    if (line.startsWith('+')) return colours.added(line);
    if (line.startsWith('-')) return colours.removed(line);
    return line;
  });
}
