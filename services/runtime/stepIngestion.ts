import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { type DomainEvent, type ProviderEvent, type StopReason, type ToolCall, type Usage, childId, wellFormedString } from '../../domain/index.ts';

export interface StepIngestionOptions {
  turnId: string;
  step: number;
  live?: (delta: LiveDelta) => void;
  now?: () => number;
  /** What is ready (a buffered delta, a part's start…) is written after at most this long. */
  flushMs?: number;
  /** …or as soon as its buffer holds this many characters. */
  maxBufferChars?: number;
}

interface Buffer {
  partId: string;
  kind: 'content' | 'toolInput';
  text: string;
  since: number;
}

/**
 * Turns one model call's canonical events into domain events. Deltas go out
 * at once on the live channel and are buffered for the log: a buffer becomes
 * an event when it is full enough or at any other event (every part
 * boundary), so a long reply is a handful of events, not thousands. What is
 * ready is handed out only once the oldest of it has waited the window (or
 * the call ends), so a streaming answer costs the log about one write per
 * window however finely it arrives; readers follow the typing on the live channel.
 * It maps mechanically; whether an event is legal is for the machines to say.
 */
export class StepIngestion {
  readonly toolCalls: ToolCall[] = [];
  usage: Usage | null = null;
  /** The model that answered, as the provider named it. */
  model: string | null = null;
  stopReason: StopReason | null = null;
  rawReason: string | null = null;
  private readonly options: Required<Omit<StepIngestionOptions, 'live'>> & Pick<StepIngestionOptions, 'live'>;
  private readonly parts = new Map<string, { partId: string; kind: 'text' | 'reasoning' | 'tool' }>();
  private readonly buffers = new Map<string, Buffer>();
  private readonly toolNames = new Map<string, string>();
  /** Parts started and not yet closed by the provider. */
  private readonly unclosed = new Set<string>();
  private pending: DomainEvent[] = [];
  /** When the oldest of `pending` became ready; `null` while it is empty. */
  private pendingSince: number | null = null;
  private full = false;
  private partCount = 0;
  /** A high surrogate that ended a delta, held until its partner arrives in the next one. */
  private readonly carry = new Map<string, string>();

  constructor(options: StepIngestionOptions) {
    this.options = { now: Date.now, flushMs: 1_000, maxBufferChars: 24_000, ...options };
  }

  /** A segment announced twice keeps its id, so the part machine sees (and refuses) the repeat. */
  private partFor(key: string, kind: 'text' | 'reasoning' | 'tool'): string {
    const known = this.parts.get(key);
    if (known) return known.partId;
    const partId = childId(this.options.turnId, `s${this.options.step}-${++this.partCount}`);
    this.parts.set(key, { partId, kind });
    return partId;
  }

  private buffer(partId: string, kind: Buffer['kind'], text: string): void {
    const existing = this.buffers.get(partId);
    if (existing) existing.text += text;
    else this.buffers.set(partId, { partId, kind, text, since: this.options.now() });
    if (this.buffers.get(partId)!.text.length < this.options.maxBufferChars) return;
    this.flushBuffer(partId);
    // A full buffer does not wait out the window: what a fast stream piles up stays bounded.
    this.full = true;
  }

  /**
   * One delta, live at once and buffered for the log. Its text is made whole
   * first: a surrogate pair split across two deltas is joined (a provider
   * slicing by UTF-16 units splits emoji), anything else unpaired becomes
   * U+FFFD, so the live and the durable text agree and are well formed.
   */
  private delta(partId: string, live: LiveDelta['kind'], text: string): void {
    let joined = (this.carry.get(partId) ?? '') + text;
    this.carry.delete(partId);
    const last = joined.charCodeAt(joined.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.carry.set(partId, joined.slice(-1));
      joined = joined.slice(0, -1);
    }
    if (joined === '') return;
    const { turnId, step } = this.options;
    const whole = wellFormedString(joined);
    this.options.live?.({ turnId, step, partId, kind: live, text: whole });
    this.buffer(partId, live === 'toolInput' ? 'toolInput' : 'content', whole);
  }

  /** The part is closing: a high surrogate still waiting for its partner never gets one. */
  private releaseCarry(partId: string, live: LiveDelta['kind']): void {
    if (this.carry.delete(partId)) this.delta(partId, live, '\uFFFD');
  }

  private flushBuffer(partId: string): void {
    const buffer = this.buffers.get(partId);
    if (!buffer) return;
    this.buffers.delete(partId);
    const { turnId, maxBufferChars } = this.options;
    // One provider chunk can be megabytes: the log takes it in events of a buffer's size, each of which fits a message.
    for (const text of pieces(buffer.text, maxBufferChars)) {
      this.ready(buffer.kind === 'content' ? { type: 'part.delta', turnId, partId, text } : { type: 'tool.inputDelta', turnId, partId, text }, buffer.since);
    }
  }

  private ready(event: DomainEvent, since: number): void {
    this.pending.push(event);
    this.pendingSince = Math.min(this.pendingSince ?? since, since);
  }

  private flushAll(): void {
    for (const partId of [...this.buffers.keys()]) this.flushBuffer(partId);
  }

  /** Emit a non-delta event: everything buffered before it goes first, keeping the log in order. */
  private emit(event: DomainEvent): void {
    this.flushAll();
    this.ready(event, this.options.now());
  }

  accept(event: ProviderEvent): void {
    const { turnId, step } = this.options;
    switch (event.type) {
      case 'turn.started':
        this.model = event.model;
        this.emit({ type: 'response.started', turnId, step, responseId: event.responseId, model: event.model });
        return;
      case 'segment.started': {
        const partId = this.partFor(`segment:${event.segmentId}`, event.kind);
        this.emit({ type: 'part.started', turnId, partId, step, kind: event.kind });
        this.unclosed.add(partId);
        return;
      }
      case 'text.delta': {
        const part = this.parts.get(`segment:${event.segmentId}`);
        const partId = part?.partId ?? this.partFor(`segment:${event.segmentId}`, 'text');
        this.delta(partId, part?.kind === 'reasoning' ? 'reasoning' : 'text', event.text);
        return;
      }
      case 'segment.completed': {
        const part = this.parts.get(`segment:${event.segmentId}`);
        const partId = part?.partId ?? this.partFor(`segment:${event.segmentId}`, 'text');
        this.releaseCarry(partId, part?.kind === 'reasoning' ? 'reasoning' : 'text');
        this.emit({ type: 'part.completed', turnId, partId, signature: event.signature });
        this.unclosed.delete(partId);
        return;
      }
      case 'toolCall.started': {
        const partId = this.partFor(`call:${event.callId}`, 'tool');
        this.toolNames.set(event.callId, event.name);
        this.emit({ type: 'part.started', turnId, partId, step, kind: 'tool', toolCallId: event.callId, toolName: event.name });
        this.unclosed.add(partId);
        return;
      }
      case 'toolCall.inputDelta':
        this.delta(this.partFor(`call:${event.callId}`, 'tool'), 'toolInput', event.text);
        return;
      case 'toolCall.ready': {
        const partId = this.partFor(`call:${event.callId}`, 'tool');
        this.releaseCarry(partId, 'toolInput');
        const input = fittedInput(event.input, MAX_TOOL_INPUT_BYTES);
        this.emit({ type: 'tool.inputReady', turnId, partId, toolCallId: event.callId, input });
        this.unclosed.delete(partId);
        if (!this.toolCalls.some((call) => call.callId === event.callId)) {
          this.toolCalls.push({ callId: event.callId, name: this.toolNames.get(event.callId) ?? 'unknown', input });
        }
        return;
      }
      case 'usage':
        this.usage = event.usage;
        return;
      case 'turn.completed':
        this.stopReason = event.stopReason;
        this.rawReason = event.rawReason;
        this.emit({ type: 'response.completed', turnId, step, stopReason: event.stopReason, rawReason: event.rawReason });
        return;
      case 'approval.requested':
      case 'approval.resolved':
      case 'session.started':
      case 'session.idle':
      case 'session.error':
      case 'turn.failed':
        // The runner owns sessions, approvals and failures; nothing to map here.
        return;
    }
  }

  /** How long until what waits (an event, a buffered delta) is due to be written; `null` when nothing waits. */
  nextDueInMs(): number | null {
    let oldest = this.pendingSince;
    for (const buffer of this.buffers.values()) oldest = oldest === null ? buffer.since : Math.min(oldest, buffer.since);
    return oldest === null ? null : Math.max(0, oldest + this.options.flushMs - this.options.now());
  }

  /**
   * Events the step's log starts with (the step itself, checked but not yet
   * written): they wait the window like any other, so the step is written
   * with its first answer, or alone once the window passes without one.
   */
  lead(events: DomainEvent[]): void {
    for (const event of events) this.ready(event, this.options.now());
  }

  /** Domain events to record now: everything that waits, once the oldest of it has waited the window; otherwise none. */
  take(): DomainEvent[] {
    return this.full || this.nextDueInMs() === 0 ? this.handOut() : [];
  }

  private handOut(): DomainEvent[] {
    this.flushAll();
    const ready = this.pending;
    this.pending = [];
    this.pendingSince = null;
    this.full = false;
    return ready;
  }

  /**
   * The answer completed but left parts open (a provider that never closed a
   * segment): text is final as it stands, a tool call without complete input
   * cannot run. Closing them lets the step close.
   */
  closeUnfinished(): void {
    const { turnId } = this.options;
    for (const [key, { partId, kind }] of this.parts) {
      if (!this.unclosed.has(partId)) continue;
      this.unclosed.delete(partId);
      if (kind === 'tool') {
        this.emit({ type: 'part.failed', turnId, partId, error: 'the provider never completed this tool call’s input' });
        const callId = key.slice('call:'.length);
        const index = this.toolCalls.findIndex((call) => call.callId === callId);
        if (index >= 0) this.toolCalls.splice(index, 1);
      } else {
        this.releaseCarry(partId, kind === 'reasoning' ? 'reasoning' : 'text');
        this.emit({ type: 'part.completed', turnId, partId, signature: null });
      }
    }
  }

  /** Everything, buffered or not: at the end of the call. */
  drain(): DomainEvent[] {
    for (const { partId, kind } of this.parts.values()) this.releaseCarry(partId, kind === 'tool' ? 'toolInput' : kind);
    return this.handOut();
  }

  /** The part of each tool call this call streamed, by call id. */
  callParts(): Map<string, string> {
    return new Map([...this.parts].filter(([key]) => key.startsWith('call:')).map(([key, { partId }]) => [key.slice('call:'.length), partId]));
  }

  /** Ids of parts this call opened, in order. */
  partIds(): string[] {
    return [...new Set([...this.parts.values()].map(({ partId }) => partId))];
  }
}

/** The text in pieces of at most `size` UTF-16 units, never between the two halves of a surrogate pair. */
function pieces(text: string, size: number): string[] {
  if (text.length <= size) return [text];
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + size);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

/**
 * A call's input, as one event, travels in one message of the bus (1 MiB at
 * most, and an event at most half of it): past this it is not recorded.
 */
export const MAX_TOOL_INPUT_BYTES = 384 * 1024;

/** The key of the input recorded in place of one too large: whatever the tool, the call is then answered with its reason. */
const OMITTED = 'turnloom.inputOmitted';

/** The input as recorded: itself, or why it is not there (a call a model asks with more than one message carries). */
export function fittedInput(input: unknown, maxBytes: number): unknown {
  const bytes = Buffer.byteLength(JSON.stringify(input) ?? '');
  if (bytes <= maxBytes) return input;
  const size = (count: number) => `${(count / 1024 / 1024).toFixed(1)} MB`;
  return {
    [OMITTED]: `this call's input is ${size(bytes)}, over the ${Math.round(maxBytes / 1024)} KB one call may carry; do it in smaller pieces (write part of the file, then add the rest with further calls)`,
  };
}

/** Why a call's input was left out (`null`: it is all there). */
export function omittedInput(input: unknown): string | null {
  const reason = typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[OMITTED] : undefined;
  return typeof reason === 'string' ? reason : null;
}

