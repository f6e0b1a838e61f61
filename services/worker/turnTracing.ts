import { type Context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type ProviderErrorInfo, type ProviderRequest, type ToolCall, type ToolKind, type Usage, VERSION } from '../../domain/index.ts';
import { contextOf, traceparentOf } from '../../protocol/traceContext.ts';

const tracer = trace.getTracer('turnloom', VERSION);

/**
 * The spans of a turn on the worker that runs it, under the trace the turn
 * recorded (`TurnView.trace`), whichever worker runs it: the turn's run
 * here, each step, each model call (GenAI's `chat`, with the model and the
 * token usage), each tool call (`execute_tool`) and each wait for an
 * approval. Its `traceparent` goes with the worker's writes, so the engine's
 * spans of them join the same trace.
 */
export class TurnTracing {
  private readonly run: Span;
  private readonly context: Context;
  private step: { span: Span; context: Context } | null = null;
  private model: Span | null = null;
  readonly traceparent: string | null;

  constructor(
    parent: string | null | undefined,
    attributes: { threadId: string; turnId: string; workerId: string; provider: string },
  ) {
    this.run = tracer.startSpan(
      'turnloom.run_turn',
      { attributes: { 'turnloom.thread.id': attributes.threadId, 'turnloom.turn.id': attributes.turnId, 'turnloom.worker.id': attributes.workerId, 'gen_ai.provider.name': attributes.provider } },
      contextOf(parent),
    );
    this.context = trace.setSpan(contextOf(parent), this.run);
    this.traceparent = traceparentOf(this.run);
  }

  /** A step begins with its model call. */
  stepStarted(step: number, request: ProviderRequest, provider: string, model: string | null): void {
    this.stepEnded();
    const span = tracer.startSpan('turnloom.step', { attributes: { 'turnloom.step': step } }, this.context);
    const context = trace.setSpan(this.context, span);
    this.step = { span, context };
    const requested = request.model ?? model;
    this.model = tracer.startSpan(
      requested ? `chat ${requested}` : 'chat',
      {
        kind: SpanKind.CLIENT,
        attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, ...(requested ? { 'gen_ai.request.model': requested } : {}), 'turnloom.tools.offered': request.tools.length },
      },
      context,
    );
  }

  /** The model call of the open step ended: with its usage and why it stopped, or with the provider's error. */
  modelEnded(outcome: { usage: Usage | null; stopReason: string | null; model: string | null } | { error: ProviderErrorInfo }): void {
    const span = this.model;
    if (!span) return;
    this.model = null;
    if ('error' in outcome) {
      span.setAttributes({ 'error.type': outcome.error.kind, ...(outcome.error.status === null ? {} : { 'http.response.status_code': outcome.error.status }) });
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
    } else {
      if (outcome.usage) span.setAttributes({ 'gen_ai.usage.input_tokens': outcome.usage.input, 'gen_ai.usage.output_tokens': outcome.usage.output });
      if (outcome.stopReason) span.setAttribute('gen_ai.response.finish_reasons', [outcome.stopReason]);
      if (outcome.model) span.setAttribute('gen_ai.response.model', outcome.model);
    }
    span.end();
  }

  /** A tool call starts running; the returned function ends its span. */
  tool(call: ToolCall, kind: ToolKind): (isError: boolean) => void {
    const span = tracer.startSpan(
      `execute_tool ${call.name}`,
      { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': call.name, 'gen_ai.tool.call.id': call.callId, 'turnloom.tool.kind': kind } },
      this.step?.context ?? this.context,
    );
    return (isError) => {
      if (isError) span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool reported an error' });
      span.end();
    };
  }

  /** The turn waits for a person to answer an approval; the returned function ends the wait with the decision. */
  approval(approvalId: string, toolName: string): (decision: string) => void {
    const span = tracer.startSpan('turnloom.approval', { attributes: { 'turnloom.approval.id': approvalId, 'gen_ai.tool.name': toolName } }, this.step?.context ?? this.context);
    return (decision) => {
      span.setAttribute('turnloom.approval.decision', decision);
      span.end();
    };
  }

  private stepEnded(): void {
    this.model?.end();
    this.model = null;
    this.step?.span.end();
    this.step = null;
  }

  /** The turn's run here ended (settled, stopped, or handed to another worker). */
  end(state: string, error?: string): void {
    this.stepEnded();
    this.run.setAttribute('turnloom.turn.outcome', state);
    if (error) this.run.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.run.end();
  }
}
