import type { Usage } from './usage.ts';

/** Why a model's answer ended, the same words for every provider. */
export type StopReason = 'stop' | 'toolCalls' | 'maxTokens' | 'refusal' | 'contentFilter' | 'other';

/**
 * The canonical provider events: what every adapter emits, whatever its
 * provider speaks. A provider's "turn" is one model call, which turnloom calls
 * a step; the turn around it is turnloom's own.
 */
export type ProviderEvent =
  /** The provider created (or resumed) a session; API providers have none and never send this. */
  | { type: 'session.started'; providerSessionId: string | null }
  /** The answer to this call began. */
  | { type: 'turn.started'; responseId: string | null; model: string | null }
  /** A text or reasoning segment opened. `segmentId` is unique within the call. */
  | { type: 'segment.started'; segmentId: string; kind: 'text' | 'reasoning' }
  | { type: 'text.delta'; segmentId: string; text: string }
  /** The segment closed; reasoning may carry a signature the provider wants back next time. */
  | { type: 'segment.completed'; segmentId: string; signature: string | null }
  | { type: 'toolCall.started'; callId: string; name: string }
  | { type: 'toolCall.inputDelta'; callId: string; text: string }
  /** The call's input is complete; `input` is the parsed JSON (`{}` for an empty input). */
  | { type: 'toolCall.ready'; callId: string; input: unknown }
  /** For providers that ask for approval themselves; the built-in ones never do (the runner asks). */
  | { type: 'approval.requested'; approvalId: string; callId: string }
  | { type: 'approval.resolved'; approvalId: string; decision: 'granted' | 'denied' }
  | { type: 'usage'; usage: Usage }
  | { type: 'turn.completed'; stopReason: StopReason; rawReason: string | null }
  | { type: 'turn.failed'; error: ProviderErrorInfo }
  | { type: 'session.idle' }
  | { type: 'session.error'; message: string };

export type ProviderErrorKind =
  /** 429: retried after `retry-after` or a backoff. */
  | 'rateLimit'
  /** 529, 503: retried with backoff. */
  | 'overloaded'
  /** Dropped connection, reset, idle stream: retried with backoff. */
  | 'connection'
  /** The context window is full: not retried, handed on for compaction. */
  | 'contextOverflow'
  /** 401, 403: fails at once. */
  | 'authentication'
  /** 400, 404, 422 and refusals of the request: fails at once. */
  | 'invalidRequest'
  /** The account is out of quota or credit: fails at once (waiting will not fix it). */
  | 'quotaExceeded'
  /** 500 and other server errors: retried with backoff. */
  | 'server';

export interface ProviderErrorInfo {
  kind: ProviderErrorKind;
  message: string;
  status: number | null;
  retryAfterMs: number | null;
}
