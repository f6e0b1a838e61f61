import type { ProviderErrorInfo, ProviderErrorKind } from '../../domain/index.ts';

export interface RetryPolicy {
  /** Attempts per model call, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** ± fraction of the delay, so many clients do not retry in step. */
  jitter: number;
  /** A provider asking to wait longer than this is not waited for: the turn fails now, saying so. */
  maxRetryAfterMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 30_000, jitter: 0.2, maxRetryAfterMs: 120_000 };

const retryable = new Set<ProviderErrorKind>(['rateLimit', 'overloaded', 'connection', 'server']);

/**
 * How long to wait before attempt `attempt + 1`, or `null` when the error
 * must not be retried (authentication, invalid requests, a full context) or
 * the attempts are spent. A provider's `retry-after` wins over the backoff.
 */
export function retryDelay(error: ProviderErrorInfo, attempt: number, policy: RetryPolicy, random: () => number = Math.random): number | null {
  if (!retryable.has(error.kind) || attempt >= policy.maxAttempts) return null;
  if (error.retryAfterMs !== null) return error.retryAfterMs <= policy.maxRetryAfterMs ? error.retryAfterMs : null;
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(backoff * (1 + policy.jitter * (2 * random() - 1)));
}
