import { setTimeout as sleep } from 'node:timers/promises';
import { type ApprovalPreview, type Logger, type ToolCall, type ToolExecutor, errorFields } from '../../domain/index.ts';

/** A preview slower than this is not waited for: the person is asked without it, and told why. */
const PREVIEW_TIMEOUT_MS = 5_000;

/**
 * What a call would change, to show beside the question of whether it may.
 * Asking never waits long on it and never fails for it: a preview that could
 * not be made is asked with the reason instead.
 */
export async function previewOf(tools: ToolExecutor, call: ToolCall, log: Logger): Promise<ApprovalPreview | null> {
  if (!tools.preview) return null;
  const stop = new AbortController();
  try {
    return await Promise.race([
      tools.preview(call),
      sleep(PREVIEW_TIMEOUT_MS, { kind: 'unavailable', reason: `the preview took longer than ${PREVIEW_TIMEOUT_MS / 1_000} s` } as const, { signal: stop.signal }),
    ]);
  } catch (error) {
    log.warn({ ...errorFields(error), tool: call.name }, 'could not preview a call before asking about it');
    return { kind: 'unavailable', reason: (error as Error).message };
  } finally {
    stop.abort();
  }
}
