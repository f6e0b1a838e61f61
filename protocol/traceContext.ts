import { type Context, ROOT_CONTEXT, type Span, type SpanContext, TraceFlags, trace } from '@opentelemetry/api';

/** The header a request carries its trace in, as W3C Trace Context writes it. */
export const TRACEPARENT_HEADER = 'traceparent';

const pattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** `00-<trace id>-<span id>-<flags>` for a span that is being recorded; `null` for one that is not (no SDK, or not sampled). */
export function traceparentOf(span: Span): string | null {
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!trace.isSpanContextValid(span.spanContext())) return null;
  return `00-${traceId}-${spanId}-${(traceFlags & TraceFlags.SAMPLED ? 1 : 0).toString(16).padStart(2, '0')}`;
}

/** A context whose parent is the span a traceparent names (on another machine, say); the root context for none or a malformed one. */
export function contextOf(traceparent: string | null | undefined): Context {
  const match = traceparent ? pattern.exec(traceparent) : null;
  if (!match) return ROOT_CONTEXT;
  const parent: SpanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return trace.isSpanContextValid(parent) ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}
