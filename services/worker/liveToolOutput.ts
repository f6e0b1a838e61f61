import { wellFormedString } from '../../domain/index.ts';

/** A running tool's output goes out live at most this often… */
const EVERY_MS = 200;
/** …as its last this many characters: enough for a person to see where it is, never a flood on the bus. */
const TAIL_CHARS = 1_000;

/**
 * What a running tool prints, for people watching it: the tail of the output
 * so far, sent at once and then at most every `EVERY_MS`, however fast the
 * command prints. Nothing of it is kept; the result carries the output.
 */
export class LiveToolOutput {
  private tail = '';
  private sentAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly send: (tail: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  readonly add = (chunk: string): void => {
    if (this.closed) return;
    this.tail = (this.tail + chunk).slice(-TAIL_CHARS);
    if (this.timer !== undefined) return;
    const wait = this.sentAt + EVERY_MS - this.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  };

  /** The call ended: its result says the rest, so nothing pending goes out. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private flush(): void {
    this.timer = undefined;
    this.sentAt = this.now();
    this.send(wellFormedString(this.tail));
  }
}
