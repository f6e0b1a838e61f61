import type { PermissionMode } from '../../domain/index.ts';
import type { TurnEvent } from '../../client/index.ts';
import { terminalJson } from '../terminalText.ts';

/** One line of `run --json` (docs/run-json.md): an object with its `type` first (and, of a turn's, its `threadId` next). */
export type JsonLine = { type: string } & Record<string, unknown>;

/** The text and reasoning typed since the last line, for one part: written as one delta. */
interface PendingDelta {
  type: 'text.delta' | 'reasoning.delta';
  threadId: string;
  turnId: string;
  step: number;
  partId: string;
  text: string;
}

/** Deltas are gathered this long at most before they are written: a line a ~tenth of a second, not one a token. */
const DELTA_FLUSH_MS = 100;

/** A tool's result (or a sub-agent's answer) is written up to this many characters; the summary holds it whole. */
const RESULT_CHARS = 10_000;
/** Of a result cut, its start and its end are kept (a command's error is at its end). */
const RESULT_TAIL_CHARS = 2_000;

/** `text` cut to `RESULT_CHARS`: its head and tail, and what was left out between, said in the text itself. */
function cappedResult(text: string | null): { text: string | null; chars: number; truncated: boolean } {
  if (text === null) return { text, chars: 0, truncated: false };
  if (text.length <= RESULT_CHARS) return { text, chars: text.length, truncated: false };
  const head = RESULT_CHARS - RESULT_TAIL_CHARS;
  const omitted = text.length - head - RESULT_TAIL_CHARS;
  return { text: `${text.slice(0, head)}\n… ${omitted} characters left out …\n${text.slice(-RESULT_TAIL_CHARS)}`, chars: text.length, truncated: true };
}

/**
 * `run --json`: the run as JSON Lines on `out`, one object a line as things
 * happen, the summary last. Text and reasoning deltas of a part are gathered
 * and written at most every `DELTA_FLUSH_MS`, and before any other line, so
 * the order of the lines is the order of the turn's events.
 */
export class JsonLines {
  private pending: PendingDelta | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly out: NodeJS.WritableStream) {}

  thread(threadId: string, mode: PermissionMode, resumed: boolean): void {
    this.write({ type: 'thread.started', threadId, mode, resumed });
  }

  /** One of a turn's events (`TurnEvent`) of `threadId` (the run's thread, or a sub-agent's for its approvals). */
  event(threadId: string, event: TurnEvent): void {
    if (event.type === 'text.delta' || event.type === 'reasoning.delta') return this.delta({ type: event.type, threadId, turnId: event.turnId, step: event.step, partId: event.partId, text: event.text });
    const line = lineOf(event);
    if (!line) return;
    const { type, ...fields } = line;
    this.write({ type, threadId, ...fields });
  }

  /** The last line of a run that could not run its turn (the thread is not there, the engine did not start): what stderr says too. */
  error(error: unknown): void {
    const { code, message } = error as { code?: unknown; message?: unknown };
    this.write({ type: 'error', code: typeof code === 'string' ? code : 'internal', message: typeof message === 'string' ? message : String(error) });
  }

  /** The last line: the run's report (what `--json` printed alone before it streamed). */
  summary(report: Record<string, unknown>): void {
    this.write({ type: 'summary', ...report });
  }

  private delta(delta: PendingDelta): void {
    const { pending } = this;
    if (pending && pending.type === delta.type && pending.partId === delta.partId && pending.turnId === delta.turnId) {
      pending.text += delta.text;
      return;
    }
    this.flush();
    this.pending = delta;
    this.timer = setTimeout(() => this.flush(), DELTA_FLUSH_MS);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const pending = this.pending;
    this.pending = null;
    if (pending) this.out.write(`${terminalJson(pending)}\n`);
  }

  private write(line: JsonLine): void {
    this.flush();
    this.out.write(`${terminalJson(line)}\n`);
  }
}

/** How one turn event reads as a line (`null`: not written, `tool.output` — the result comes whole with `tool.finished`). */
function lineOf(event: Exclude<TurnEvent, { type: 'text.delta' | 'reasoning.delta' }>): JsonLine | null {
  switch (event.type) {
    case 'turn.started':
      return { type: 'turn.started', turnId: event.turnId };
    case 'step.started':
      return { type: 'step.started', turnId: event.turnId, step: event.step };
    case 'step.finished': {
      const { turnId, step, outcome, stopReason, error, usage } = event;
      return { type: 'step.finished', turnId, step, outcome, stopReason, error, usage };
    }
    case 'tool.started': {
      const { turnId, step, partId, callId, name, input } = event;
      return { type: 'tool.started', turnId, step, partId, callId, name, input };
    }
    case 'tool.output':
      return null;
    case 'tool.finished': {
      const { turnId, step, partId, callId, name, state, error } = event;
      const result = cappedResult(event.result);
      return { type: 'tool.finished', turnId, step, partId, callId, name, state, result: result.text, resultChars: result.chars, truncated: result.truncated, error: cappedResult(error).text };
    }
    case 'approval.asked': {
      const { id, partId, toolCallId, toolName, input, kind, subject, reason } = event.approval;
      return { type: 'approval.requested', turnId: event.turnId, approvalId: id, partId, callId: toolCallId, toolName, kind, subject, input, reason };
    }
    case 'approval.answered': {
      const { turnId, approvalId, partId, callId, decision, by, note } = event;
      return { type: 'approval.answered', turnId, approvalId, partId, callId, decision, by, note };
    }
    case 'subagent.started': {
      const { turnId, step, partId, callId, childThreadId, agent, prompt, description } = event;
      return { type: 'subagent.started', turnId, step, partId, callId, childThreadId, agent, prompt, description };
    }
    case 'subagent.settled': {
      const { turnId, step, partId, callId, childThreadId, status, error, usage } = event;
      return { type: 'subagent.settled', turnId, step, partId, callId, childThreadId, status, answer: cappedResult(event.answer).text, error, usage };
    }
    case 'usage':
      return { type: 'usage', turnId: event.turnId, usage: event.usage };
    case 'activity': {
      const { turnId, kind, message } = event;
      return { type: 'activity', turnId, kind, message };
    }
    case 'turn.settled': {
      const { turnId, state, text, error, usage } = event.turn;
      return { type: 'turn.settled', turnId, state, text, error, usage };
    }
  }
}
