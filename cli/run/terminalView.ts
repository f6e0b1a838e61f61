import type { ApprovalPreview } from '../../domain/index.ts';
import { type Paint, paint, paintPatch } from '../colours.ts';
import { visible } from '../terminalText.ts';
import { cutToWidth as cut, displayWidth, tailToWidth } from '../displayWidth.ts';
import type { Progress } from './turnProgress.ts';

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
/** A failed call shows this many of its last output lines (`verbose`: all it returned). */
const FAILURE_TAIL_LINES = 20;
/** A tool's output line, shown indented under it, is cut at this many columns. */
const MAX_SHOWN_LINE = 200;

const nonEmptyLines = (text: string) => text.split('\n').filter((line) => line.trim() !== '');

export interface TerminalViewOptions {
  /** A terminal: a spinner and a status line redrawn in place; otherwise plain lines. */
  tty: boolean;
  /** Colour, when the stream and the environment want it (see `wantsColour`). */
  colour?: boolean;
  /** Every finished call's output, not only the tail of a failed one's. */
  verbose?: boolean;
  now?: () => number;
}

/**
 * A run as a person reads it: the answer typed out, reasoning dimmed, each
 * tool with its elapsed time and latest output line while it runs and its
 * duration when it ends (the tail of its output when it failed), what an
 * approval allows before it is asked. In a terminal the last line is a
 * status line redrawn in place: the running tool, or the line being typed,
 * so typing never lands inside the model's text. On a pipe, the same lines
 * without spinner or colour.
 */
export class TerminalView {
  private atLineStart = true;
  private lastPart: string | null = null;
  private running: { partId: string; label: string; startedAt: number; latest: string } | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private frame = 0;
  /** How wide the status line drawn last is (0: none is shown). */
  private statusWidth = 0;
  /** The line a person is typing, after its prompt (a question, or `› ` for input to the turn). */
  private typing: { prompt: string; text: string } | null = null;
  private readonly startedAt = new Map<string, number>();
  private readonly colours: Paint;
  private readonly colour: boolean;
  private readonly tty: boolean;
  private readonly verbose: boolean;
  private readonly now: () => number;

  constructor(
    private readonly out: NodeJS.WritableStream & { columns?: number },
    options: TerminalViewOptions,
  ) {
    this.tty = options.tty;
    this.colour = options.colour ?? false;
    this.colours = paint(this.colour);
    this.verbose = options.verbose ?? false;
    this.now = options.now ?? Date.now;
  }

  get paint(): Paint {
    return this.colours;
  }

  show(progress: Progress): void {
    switch (progress.kind) {
      case 'text':
      case 'reasoning': {
        if (this.lastPart !== progress.partId) {
          this.line('');
          if (progress.kind === 'reasoning' && !this.tty) this.write('(thinking) ');
        }
        this.lastPart = progress.partId;
        const text = visible(progress.text);
        this.write(progress.kind === 'reasoning' ? this.colours.dim(text) : text);
        return;
      }
      case 'toolStarted':
        this.startedAt.set(progress.partId, this.now());
        this.lastPart = progress.partId;
        if (this.tty) {
          this.line('');
          this.running = { partId: progress.partId, label: progress.label, startedAt: this.now(), latest: '' };
          this.ticker ??= setInterval(() => this.redrawStatus(), 100);
          this.redrawStatus();
        } else this.line(`▸ ${progress.label}`);
        return;
      case 'toolEnded': {
        const started = this.startedAt.get(progress.partId);
        const took = started === undefined ? '' : `  ${seconds(this.now() - started)}`;
        if (this.running?.partId === progress.partId) this.stopRunning();
        this.lastPart = progress.partId;
        const lines = nonEmptyLines(progress.detail);
        const last = lines.at(-1) ?? '';
        const mark = progress.ok ? this.colours.ok('✓') : this.colours.failed('✗');
        this.line(`${mark} ${progress.label}${took}${progress.ok ? '' : `: ${cut(visible(last), 120)}`}`);
        // A failure's last line is on the line above; what led to it is under it.
        const shown = this.verbose ? lines : progress.ok ? [] : lines.slice(-FAILURE_TAIL_LINES - 1, -1);
        if (!this.verbose && !progress.ok && lines.length > FAILURE_TAIL_LINES + 1) this.line(this.colours.dim(`  … ${lines.length - FAILURE_TAIL_LINES - 1} lines above (--verbose shows all)`));
        for (const line of shown) this.line(this.colours.dim(`  │ ${cut(visible(line), MAX_SHOWN_LINE)}`));
        return;
      }
      case 'approval':
        this.line('');
        for (const line of this.previewLines(progress.approval.preview)) this.line(line);
        return;
      case 'note':
        this.lastPart = null;
        this.line(progress.text);
        return;
    }
  }

  /** The latest output of a running call, from the live channel: shown on its status line. */
  toolOutput(partId: string, tail: string): void {
    if (this.running?.partId !== partId) return;
    this.running.latest = visible(nonEmptyLines(tail).at(-1) ?? '');
    this.redrawStatus();
  }

  /** What a person is typing now (`null`: nothing is being typed or asked), drawn on the status line. */
  typed(typing: { prompt: string; text: string } | null): void {
    this.typing = typing;
    this.redrawStatus();
  }

  /** A line of its own, after whatever was being typed; any control in it is shown, not obeyed (colour added here is kept). */
  line(text: string): void {
    if (!this.atLineStart) this.write('\n');
    if (text !== '') this.write(`${text}\n`);
  }

  close(): void {
    this.stopRunning();
    this.typing = null;
    this.clearStatus();
    if (!this.atLineStart) this.write('\n');
  }

  /** What an approval allows: the diff coloured, the command with its folder, or why neither could be shown. */
  previewLines(preview: ApprovalPreview | null): string[] {
    if (preview === null) return [];
    switch (preview.kind) {
      case 'diff': {
        const counts = `${this.colours.added(`+${preview.additions}`)} ${this.colours.removed(`−${preview.deletions}`)}`;
        const head = `  ${preview.created ? 'new file' : 'changes'} ${visible(preview.path)}  ${counts}${preview.cut ? ' (diff cut)' : ''}`;
        return [head, ...paintPatch(preview.patch.split('\n').map(visible), this.colours).map((line) => `    ${line}`)];
      }
      case 'command':
        return [`  ${this.colours.strong(`$ ${visible(preview.command)}`)}`, this.colours.dim(`    in ${visible(preview.cwd)}`)];
      case 'unavailable':
        return [this.colours.dim(`  (no preview: ${visible(preview.reason)})`)];
    }
  }

  private write(text: string): void {
    if (text === '') return;
    this.clearStatus();
    this.out.write(text);
    this.atLineStart = text.endsWith('\n');
    this.redrawStatus();
  }

  private stopRunning(): void {
    this.running = null;
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    this.redrawStatus();
  }

  /** The status line: the question or line being typed, else the running call; only ever below finished lines. */
  private status(): string | null {
    const width = Math.max(20, (this.out.columns ?? 80) - 1);
    if (this.typing !== null) {
      const prompt = cut(this.typing.prompt, width - 10);
      return `${prompt}${tailToWidth(visible(this.typing.text), width - displayWidth(prompt))}`;
    }
    if (this.running === null) return null;
    const { label, startedAt, latest } = this.running;
    const head = `${frames[this.frame++ % frames.length]} ${label}  ${seconds(this.now() - startedAt)}`;
    const room = width - displayWidth(head) - 3;
    return latest === '' || room < 10 ? cut(head, width) : `${head}${this.colours.dim(` · ${cut(latest, room)}`)}`;
  }

  /** Without colour no escape is written at all (`NO_COLOR`): the line is blanked with spaces instead of erased. */
  private blank(): string {
    return this.colour ? '\r\x1b[K' : `\r${' '.repeat(this.statusWidth)}\r`;
  }

  private clearStatus(): void {
    if (this.statusWidth === 0) return;
    this.out.write(this.blank());
    this.statusWidth = 0;
  }

  private redrawStatus(): void {
    if (!this.tty || !this.atLineStart) return;
    const status = this.status();
    if (status === null) return this.clearStatus();
    this.out.write(`${this.statusWidth === 0 ? '\r' : this.blank()}${status}`);
    this.statusWidth = displayWidth(status);
  }
}
