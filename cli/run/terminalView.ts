import { visible } from '../terminalText.ts';
import type { Progress } from './turnProgress.ts';

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
/** A failure's last words say most: a command's exit code, an error's message. */
const lastLine = (text: string) => {
  const line = text.split('\n').findLast((candidate) => candidate.trim() !== '') ?? '';
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
};

/**
 * A run as a person reads it: the answer typed out, reasoning dimmed, each
 * tool with a spinner while it runs and its duration when it ends. On a pipe
 * (no terminal) the same lines, without the spinner or colour.
 */
export class TerminalView {
  private atLineStart = true;
  private lastPart: string | null = null;
  private spinner: { timer: NodeJS.Timeout; label: string; frame: number } | null = null;
  private readonly startedAt = new Map<string, number>();

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly tty: boolean,
    private readonly now: () => number = Date.now,
  ) {}

  show(progress: Progress): void {
    switch (progress.kind) {
      case 'text':
      case 'reasoning': {
        this.stopSpinner();
        if (this.lastPart !== progress.partId) {
          this.line('');
          if (progress.kind === 'reasoning') this.write(this.tty ? '' : '(thinking) ');
        }
        this.lastPart = progress.partId;
        const text = visible(progress.text);
        this.write(progress.kind === 'reasoning' && this.tty ? `\x1b[2m${text}\x1b[22m` : text);
        return;
      }
      case 'toolStarted':
        this.startedAt.set(progress.partId, this.now());
        this.lastPart = progress.partId;
        if (this.tty) this.startSpinner(progress.label);
        else this.line(`▸ ${progress.label}`);
        return;
      case 'toolEnded': {
        const started = this.startedAt.get(progress.partId);
        const took = started === undefined ? '' : `  ${seconds(this.now() - started)}`;
        this.stopSpinner();
        this.lastPart = progress.partId;
        const detail = progress.ok ? '' : `: ${visible(lastLine(progress.detail))}`;
        this.line(`${progress.ok ? '✓' : '✗'} ${progress.label}${took}${detail}`);
        return;
      }
      case 'approval':
        this.stopSpinner();
        this.line('');
        return;
      case 'note':
        this.lastPart = null;
        this.line(progress.text);
        return;
    }
  }

  /** A line of its own, after whatever was being typed; any control in it is shown, not obeyed. */
  line(text: string): void {
    this.stopSpinner();
    if (!this.atLineStart) this.write('\n');
    if (text !== '') this.write(`${visible(text)}\n`);
  }

  close(): void {
    this.stopSpinner();
    if (!this.atLineStart) this.write('\n');
  }

  private write(text: string): void {
    if (text === '') return;
    this.out.write(text);
    this.atLineStart = text.endsWith('\n');
  }

  private startSpinner(label: string): void {
    this.line('');
    const spinner = { label, frame: 0, timer: setInterval(() => this.drawSpinner(), 80) };
    this.spinner = spinner;
    this.drawSpinner();
  }

  private drawSpinner(): void {
    if (!this.spinner) return;
    this.out.write(`\r\x1b[K${frames[this.spinner.frame++ % frames.length]} ${this.spinner.label}`);
  }

  private stopSpinner(): void {
    if (!this.spinner) return;
    clearInterval(this.spinner.timer);
    this.spinner = null;
    this.out.write('\r\x1b[K');
    this.atLineStart = true;
  }
}
