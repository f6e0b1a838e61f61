import { type Span, SpanKind, SpanStatusCode, metrics, trace } from '@opentelemetry/api';
import { type DomainEvent, VERSION } from '../../domain/index.ts';
import { contextOf, traceparentOf } from '../../protocol/traceContext.ts';
import type { Engine } from '../engine/engine.ts';

const key = (threadId: string, turnId: string) => `${threadId}/${turnId}`;

/**
 * A turn as OpenTelemetry sees it, through `@opentelemetry/api` only (the
 * SDK and exporter are the embedder's, or the CLI's with `OTEL_*`): a span
 * `invoke_agent turnloom` from `turn.start` to the turn's end, whose trace
 * the turn records (`turn.requested.trace`) so the spans of the worker that
 * runs it, on any machine, join it; and counters and histograms of turns,
 * their durations, their tokens and the API's refusals. Without an SDK all
 * of it costs a few no-op calls.
 */
export class TurnTelemetry {
  private readonly tracer = trace.getTracer('turnloom', VERSION);
  private readonly meter = metrics.getMeter('turnloom', VERSION);
  private readonly spans = new Map<string, Span>();
  private readonly turns = this.meter.createCounter('turnloom.turns', { description: 'Turns that ended, by outcome' });
  private readonly durations = this.meter.createHistogram('turnloom.turn.duration', { unit: 's', description: 'From turn.start to the turn’s end' });
  private readonly tokens = this.meter.createHistogram('gen_ai.client.token.usage', { unit: '{token}', description: 'Tokens a turn used, by type' });
  private readonly refusals = this.meter.createCounter('turnloom.api.errors', { description: 'API requests answered with an error, by method and code' });
  private readonly unlisten: () => void;

  constructor(private readonly engine: Engine) {
    this.unlisten = engine.onCommitted((events) => {
      for (const { threadId, at, event } of events) this.heard(threadId, at, event);
    });
  }

  /** Opens the turn's span (under the caller's trace, when its request carried one); what the turn must record so its worker's spans join it. */
  startTurn(threadId: string, turnId: string, callerTraceparent: string | undefined): string | undefined {
    const span = this.tracer.startSpan(
      'invoke_agent turnloom',
      { kind: SpanKind.SERVER, attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'turnloom', 'turnloom.thread.id': threadId, 'turnloom.turn.id': turnId } },
      contextOf(callerTraceparent),
    );
    const traceparent = traceparentOf(span);
    if (traceparent === null) {
      span.end();
      return undefined;
    }
    this.spans.set(key(threadId, turnId), span);
    return traceparent;
  }

  /** The `turn.start` made no turn of its own (its input was steered into the open one), or failed: its span ends now. */
  noTurn(threadId: string, turnId: string, why: string, failed = false): void {
    const span = this.spans.get(key(threadId, turnId));
    if (!span) return;
    this.spans.delete(key(threadId, turnId));
    span.setAttribute('turnloom.turn.outcome', why);
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: why });
    span.end();
  }

  requestFailed(method: string, code: string): void {
    this.refusals.add(1, { 'turnloom.api.method': method, 'error.type': code });
  }

  private heard(threadId: string, at: number, event: DomainEvent): void {
    if (event.type !== 'turn.completed' && event.type !== 'turn.failed' && event.type !== 'turn.interrupted') return;
    const turn = this.engine.readTurn(threadId, event.turnId);
    const outcome = event.type.slice('turn.'.length);
    const attributes = { 'turnloom.turn.outcome': outcome, 'gen_ai.provider.name': turn?.provider.name ?? 'unknown' };
    this.turns.add(1, attributes);
    if (turn) {
      this.durations.record((at - turn.requestedAt) / 1_000, attributes);
      this.tokens.record(turn.usage.input, { ...attributes, 'gen_ai.token.type': 'input' });
      this.tokens.record(turn.usage.output, { ...attributes, 'gen_ai.token.type': 'output' });
    }
    const span = this.spans.get(key(threadId, event.turnId));
    if (!span) return;
    this.spans.delete(key(threadId, event.turnId));
    span.setAttribute('turnloom.turn.outcome', outcome);
    if (turn) span.setAttributes({ 'gen_ai.usage.input_tokens': turn.usage.input, 'gen_ai.usage.output_tokens': turn.usage.output, 'gen_ai.provider.name': turn.provider.name });
    if (event.type === 'turn.failed') span.setStatus({ code: SpanStatusCode.ERROR, message: event.error });
    span.end(at);
  }

  /** Ends what is still open (the process stops while turns run: they go on elsewhere, their spans end here). */
  stop(): void {
    this.unlisten();
    for (const span of this.spans.values()) {
      span.setAttribute('turnloom.turn.outcome', 'unknown (the engine stopped)');
      span.end();
    }
    this.spans.clear();
  }
}
