import { constants } from 'node:fs';
import { z } from 'zod';
import { headOf } from './capOutput.ts';
import { openRegularFile } from './regularFile.ts';
import { defineTool } from './toolDefinition.ts';
import { ToolError } from './toolError.ts';

const input = z
  .object({
    path: z.string().min(1).describe('The file to read, relative to the workspace root.'),
    offset: z.number().int().min(1).optional().describe('The first line to show, counting from 1.'),
    limit: z.number().int().min(1).optional().describe('How many lines to show.'),
  })
  .strict();

/** Where git and grep look for a NUL byte to call a file binary. */
const binaryProbeBytes = 8 * 1024;
const chunkBytes = 64 * 1024;
/** Room kept for the closing note, so the generic output cap never cuts a read in its middle. */
const noteChars = 200;

const numbered = (line: number, text: string): string => `${String(line).padStart(6)}\t${text}\n`;

/**
 * Lines `first`..`last` of a file fed in chunks, numbered, within `maxBytes`
 * of the file and `maxChars` of output. Every line is counted, shown or not,
 * so the model learns how long the file is.
 */
class LineWindow {
  readonly shown: string[] = [];
  total = 0;
  /** The shown line that did not fit whole. */
  cutLine: number | null = null;
  private full = false;
  private outputChars = 0;
  private keptBytes = 0;
  private line: Buffer[] = [];
  private lineBytes = 0;
  private lineCut = false;

  constructor(
    private readonly first: number,
    private readonly last: number,
    private readonly maxBytes: number,
    private readonly maxChars: number,
  ) {}

  push(chunk: Buffer): void {
    for (let start = 0; start < chunk.length; ) {
      const newline = chunk.indexOf(0x0a, start);
      this.take(chunk.subarray(start, newline === -1 ? chunk.length : newline));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  /** At the end of the file: a last line without a newline still counts. */
  finish(): void {
    if (this.lineBytes > 0) this.endLine();
  }

  private wanted(): boolean {
    const number = this.total + 1;
    return !this.full && number >= this.first && number <= this.last;
  }

  private take(bytes: Buffer): void {
    this.lineBytes += bytes.length;
    if (!this.wanted()) return;
    const room = this.maxBytes - this.keptBytes;
    if (bytes.length > room) this.lineCut = true;
    const kept = bytes.subarray(0, room);
    this.line.push(kept);
    this.keptBytes += kept.length;
  }

  private endLine(): void {
    if (this.wanted()) this.show(this.total + 1);
    this.total += 1;
    this.line = [];
    this.lineBytes = 0;
    this.lineCut = false;
  }

  private show(number: number): void {
    const kept = Buffer.concat(this.line);
    const rendered = numbered(number, kept.toString('utf8'));
    const fits = this.outputChars + rendered.length <= this.maxChars;
    // A later line that does not fit waits for the next call; only the first is shown cut, else nothing would ever show.
    if ((this.lineCut || !fits) && this.shown.length > 0) {
      this.full = true;
      return;
    }
    this.shown.push(fits ? rendered : `${headOf(rendered, this.maxChars - 1)}\n`);
    this.outputChars += rendered.length;
    if (this.lineCut || !fits) {
      this.cutLine = number;
      this.full = true;
    }
  }
}

export const readTool = defineTool({
  name: 'read',
  description:
    'Read a text file, shown with line numbers (`     12\\tcode`). Long files are shown in part, with a note saying which lines; ask for more with offset and limit.',
  kind: 'read',
  input,
  subject: ({ path }, workspace) => workspace.subject(path),
  async run({ path, offset = 1, limit }, { workspace, signal, maxReadBytes, maxOutputChars }) {
    const file = await workspace.resolve(path);
    const { handle } = await openRegularFile(file.real, file.relative, constants.O_RDONLY);
    const window = new LineWindow(offset, limit === undefined ? Infinity : offset + limit - 1, maxReadBytes, Math.max(1, maxOutputChars - noteChars));
    try {
      const buffer = Buffer.alloc(chunkBytes);
      for (let first = true; ; first = false) {
        signal.throwIfAborted();
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        if (first && buffer.subarray(0, Math.min(bytesRead, binaryProbeBytes)).includes(0)) {
          throw new ToolError(`${file.relative} looks binary (it has NUL bytes); read shows text files only`);
        }
        window.push(buffer.subarray(0, bytesRead));
      }
    } finally {
      await handle.close();
    }
    window.finish();
    if (window.total === 0) return `(${file.relative} is empty)`;
    if (offset > window.total) return `(${file.relative} has ${window.total} lines; offset ${offset} is past its end)`;
    const lastShown = offset + window.shown.length - 1;
    const body = window.shown.join('');
    if (offset === 1 && lastShown === window.total && window.cutLine === null) return body;
    const cut = window.cutLine === null ? '' : `; line ${window.cutLine} is cut short`;
    return `${body}[showing lines ${offset}–${lastShown} of ${window.total}${cut}; use offset/limit]`;
  },
});
