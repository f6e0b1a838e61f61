import type { ProviderErrorInfo, ProviderErrorKind } from '../../domain/index.ts';

interface ApiErrorLike {
  name?: string;
  message?: string;
  status?: number;
  headers?: Headers | Record<string, string | null | undefined> | null;
  code?: string | null;
  type?: string | null;
  error?: { type?: string; code?: string; message?: string; error?: { type?: string; message?: string } } | null;
  cause?: unknown;
}

function header(headers: ApiErrorLike['headers'], name: string): string | null {
  if (!headers) return null;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  return (headers as Record<string, string | null | undefined>)[name] ?? null;
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
function retryAfterMs(headers: ApiErrorLike['headers']): number | null {
  const ms = Number(header(headers, 'retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const value = header(headers, 'retry-after');
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1_000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

const contextOverflow = /context[_ ]length|context window|context limit|maximum context|too many tokens|prompt is too long|input is too long/i;

/** The provider's own words for the error, wherever the SDK put them. */
function typeOf(error: ApiErrorLike): string {
  return [error.type, error.code, error.error?.type, error.error?.code, error.error?.error?.type].filter(Boolean).join(' ');
}

/**
 * Classifies an error from either official SDK (or the network under it)
 * into one of the kinds the runner's retry policy understands.
 */
export function classifyProviderError(thrown: unknown): ProviderErrorInfo {
  const error = (thrown ?? {}) as ApiErrorLike;
  const status = typeof error.status === 'number' ? error.status : null;
  const type = typeOf(error);
  const message = error.error?.error?.message ?? error.error?.message ?? error.message ?? String(thrown);
  const info = (kind: ProviderErrorKind): ProviderErrorInfo => ({ kind, message, status, retryAfterMs: retryAfterMs(error.headers) });

  if (/insufficient_quota|billing|credit/i.test(type)) return info('quotaExceeded');
  if (status === 429 || /rate_limit/i.test(type)) return info('rateLimit');
  if (status === 529 || status === 503 || /overloaded/i.test(type)) return info('overloaded');
  if (status === 401 || status === 403 || /authentication|permission/i.test(type)) return info('authentication');
  if (contextOverflow.test(`${type} ${message}`)) return info('contextOverflow');
  if (status !== null && status >= 400 && status < 500) return info(status === 408 ? 'connection' : 'invalidRequest');
  if (/invalid_request/i.test(type)) return info('invalidRequest');
  if (status !== null && status >= 500) return info('server');
  if (/api_error|server_error/i.test(type)) return info('server');
  // Below the HTTP layer: resets, timeouts, and bytes that did not parse are all a broken stream.
  return info('connection');
}
