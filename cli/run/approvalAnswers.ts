import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { visible } from '../terminalText.ts';
import type { ApprovalView } from '../../domain/index.ts';
import { toolLabel } from './turnProgress.ts';

/** Who answers approvals in a run: the person at the keyboard, or a standing policy when nobody is there. */
export type ApprovalPolicy = 'ask' | 'auto' | 'deny';

export interface ApprovalAnswer {
  decision: 'once' | 'always' | 'deny';
  note: string | null;
}

/** Lines typed by a person; `null` once the input has ended (nobody is left to answer). */
export interface LineSource {
  question(prompt: string): Promise<string | null>;
  /**
   * One of `keys` (lower case): in a terminal the first of them pressed,
   * without Enter (other keys are ignored while it is asked); from a pipe, a
   * line, as `question` reads it.
   */
  choose(prompt: string, keys: readonly string[]): Promise<string | null>;
  close(): void;
}

/** A terminal screen that draws the line being typed itself (below what is printed), and prints finished lines. */
export interface TypingScreen {
  typed(typing: { prompt: string; text: string } | null): void;
  line(text: string): void;
}

/** What readline would echo goes nowhere: the screen draws the line being typed. */
const nowhere = () => new Writable({ write: (_chunk, _encoding, done) => done() });

/** The prompt of a line typed when nothing was asked: input for the turn. */
const INPUT_PROMPT = '› ';

/**
 * For this long after a key answered a question, the same key again or
 * Enter is taken as part of the answer (a key pressed twice, Enter out of
 * habit), not as input for the turn.
 */
const ANSWER_ECHO_MS = 1_000;

/** What readline passes with a `keypress`. */
interface Key {
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
}

/**
 * Reads answers from a stream (a terminal, or a pipe a script writes to).
 * From a pipe, lines typed ahead wait for the next question. In a terminal a
 * person types while the turn runs, so a line typed when nothing was asked
 * goes to `onUnasked` (a prompt for the turn) when given; with a `screen`,
 * the line being typed is drawn by it, never inside what the run prints,
 * and each finished line is shown on a line of its own. A choice (`choose`)
 * is one key in a terminal: readline keeps the terminal in raw mode (and
 * restores it when closed), so the key arrives alone, and is taken back out
 * of the line being typed.
 */
export function lineSource(input: NodeJS.ReadableStream, output: NodeJS.WritableStream, onInterrupt: () => void, onUnasked?: (line: string) => void, screen?: TypingScreen): LineSource {
  const terminal = (input as { isTTY?: boolean }).isTTY === true;
  const drawn = terminal && screen !== undefined;
  // No prompt of readline's own: it would be drawn over the question when the line is redrawn.
  const lines = createInterface({ input, output: drawn ? nowhere() : output, terminal, prompt: '' });
  const typed: string[] = [];
  const waiting: Array<(line: string | null) => void> = [];
  let asking: string | null = null;
  let choosing: { keys: readonly string[]; resolve: (key: string | null) => void } | null = null;
  let lastAnswer: { key: string; at: number } | null = null;
  let ended = false;
  const redraw = () => screen?.typed(asking !== null ? { prompt: asking, text: lines.line } : lines.line !== '' ? { prompt: INPUT_PROMPT, text: lines.line } : null);
  /** Whether a key (or Enter, `\r`) just repeats the answer given a moment ago, while nothing else is asked. */
  const echoesAnswer = (key: string) => lastAnswer !== null && waiting.length === 0 && choosing === null && Date.now() - lastAnswer.at < ANSWER_ECHO_MS && (key === lastAnswer.key || key === '\r');
  // readline has updated its line by the time a listener added after its own hears the key: a key that is not input is taken back out.
  const onKey = (sequence: string | undefined, key: Key | undefined) => {
    const printable = sequence !== undefined && sequence.length === 1 && sequence >= ' ' && !key?.ctrl && !key?.meta;
    if (printable && (choosing !== null || echoesAnswer(sequence.toLowerCase()))) {
      lines.write(null, { name: 'backspace' });
      const choice = choosing;
      if (choice?.keys.includes(sequence.toLowerCase())) {
        choosing = null;
        lastAnswer = { key: sequence.toLowerCase(), at: Date.now() };
        const prompt = asking ?? '';
        asking = null;
        if (drawn) {
          screen.typed(null);
          screen.line(`${prompt}${sequence}`);
        } else output.write(`\r${prompt}${sequence}\n`);
        choice.resolve(lastAnswer.key);
      } else if (choosing !== null) reprompt();
    }
    if (drawn) redraw();
  };
  /** The question's last line again: readline, redrawing its own line (without a screen), wiped it. */
  const reprompt = () => (drawn ? redraw() : output.write(`\r${asking ?? ''}`));
  if (terminal) input.on('keypress', onKey);
  lines.on('line', (line) => {
    // Enter with nothing typed, while a key is awaited or just after one answered: part of the answer, not a line.
    if (line.trim() === '' && (choosing !== null || echoesAnswer('\r'))) return choosing === null ? redraw() : reprompt();
    const next = choosing === null ? waiting.shift() : undefined;
    const prompt = next ? (asking ?? INPUT_PROMPT) : INPUT_PROMPT;
    if (next) asking = null;
    if (drawn) {
      // The line being typed is done: off the status line, onto one of its own.
      screen.typed(null);
      screen.line(`${prompt}${visible(line)}`);
    }
    if (next) next(line);
    else if (terminal && onUnasked) onUnasked(line);
    else typed.push(line);
    redraw();
  });
  lines.on('close', () => {
    ended = true;
    if (terminal) input.off('keypress', onKey);
    asking = null;
    redraw();
    for (const resolve of waiting.splice(0)) resolve(null);
    choosing?.resolve(null);
    choosing = null;
  });
  // In raw mode Ctrl-C reaches readline, not the process.
  lines.on('SIGINT', onInterrupt);
  /** The question's own lines are printed; its last line is where the answer is typed. */
  const show = (prompt: string) => {
    const at = prompt.lastIndexOf('\n');
    asking = prompt.slice(at + 1);
    if (!drawn) return void output.write(prompt);
    if (at >= 0) screen.line(prompt.slice(0, at));
    redraw();
  };
  const question = (prompt: string): Promise<string | null> => {
    if (!drawn) output.write(prompt);
    const answered = (line: string | null) => {
      // A terminal echoes what was typed; answers from a pipe are shown, so the transcript reads right.
      if (!terminal) output.write(`${line ?? ''}\n`);
      return line;
    };
    if (typed.length > 0) return Promise.resolve(answered(typed.shift()!));
    if (ended) return Promise.resolve(answered(null));
    if (drawn) show(prompt);
    return new Promise((resolve) => waiting.push((line) => resolve(answered(line))));
  };
  return {
    question,
    choose: (prompt, keys) => {
      if (!terminal || ended) return question(prompt);
      show(prompt);
      return new Promise((resolve) => (choosing = { keys, resolve }));
    },
    close: () => lines.close(),
  };
}

/** How much of a call an approval shows on its line: enough of an MCP tool's arguments to judge it, not a screenful. */
const approvalLabelColumns = 300;

/**
 * The answer to one approval. `auto` and `deny` answer at once, saying so;
 * `ask` asks: y (once), a (always: a rule for this thread), n (deny, with a
 * note the model reads). Input that ends denies, so a run never hangs.
 */
export async function answerApproval(policy: ApprovalPolicy, approval: ApprovalView, lines: () => LineSource, say: (line: string) => void): Promise<ApprovalAnswer> {
  // No rule vouches for a call that outlives itself: the person answering is told it does.
  const keeps = (approval.input as { keepRunning?: unknown } | null)?.keepRunning === true;
  // Longer than a progress line: the person decides on what it shows.
  const what = `${toolLabel(approval.toolName, approval.input, approvalLabelColumns)}${keeps ? ' (keeps running until the turn ends)' : ''}`;
  if (policy === 'auto') {
    say(`✔ allowed ${what} (--approve auto)`);
    return { decision: 'once', note: null };
  }
  if (policy === 'deny') {
    say(`✘ denied ${what} (--approve deny)`);
    return { decision: 'deny', note: 'nobody was there to approve it (the run denies what needs approval)' };
  }
  for (;;) {
    const line = await lines().choose(`? allow ${what}\n  [y]es once / [a]lways in this thread / [n]o: `, ['y', 'a', 'n']);
    if (line === null) {
      say(`✘ denied ${what}: no one answered (input ended)`);
      return { decision: 'deny', note: 'nobody answered' };
    }
    const choice = line.trim().toLowerCase();
    if (choice === 'y' || choice === 'yes') return { decision: 'once', note: null };
    if (choice === 'a' || choice === 'always') return { decision: 'always', note: null };
    if (choice === 'n' || choice === 'no') {
      const note = await lines().question('  why (the model reads this; Enter to skip): ');
      return { decision: 'deny', note: note?.trim() ? note.trim() : null };
    }
    say('  answer y, a or n');
  }
}
