// @ts-check
/** One line saying what a stored event holds, for the timeline. */
import { shortId } from './dom.js';

/** @param {unknown} value @param {number} [max] */
function clip(value, max = 140) {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? '';
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** @param {string} text */
const quoted = (text) => JSON.stringify(clip(text, 120));

/** A part's id without its turn's, which the timeline shows beside it (`s1-2`). @param {any} e */
const part = (e) => (typeof e.partId === 'string' && typeof e.turnId === 'string' && e.partId.startsWith(`${e.turnId}-`) ? e.partId.slice(e.turnId.length + 1) : shortId(e.partId));

/** How many files a checkpoint's changes touch, and how many of them its list leaves out (events from before the totals carry only the list). @param {any} changes */
function changed(changes) {
  const total = changes.filesChanged ?? changes.files?.length ?? 0;
  return `${total} file(s)${changes.filesOmitted > 0 ? ` (${changes.filesOmitted} not listed)` : ''}`;
}

/** @type {Record<string, (e: any) => string>} */
const summaries = {
  'thread.created': (e) => `${quoted(e.title)}${e.workspace ? ` in ${e.workspace}` : ''} · env ${e.environment} · mode ${e.permissions?.mode ?? '?'}`,
  'thread.configured': (e) => `mode ${e.mode ?? '(kept)'}${e.rules ? ` · ${e.rules.length} rules` : ''}${e.agent ? ` · agent ${e.agent}` : ''}`,
  'thread.renamed': (e) => quoted(e.title),
  'permission.ruleAdded': (e) => `${e.rule?.tool} ${e.rule?.pattern} → ${e.rule?.decision} by ${e.by}`,
  'session.started': (e) => `provider session ${e.providerSessionId ?? '(none)'}`,
  'session.failed': (e) => e.reason,
  'session.stopRequested': (e) => e.reason,
  'turn.requested': (e) => `${quoted(e.input?.text ?? '')} · ${e.provider?.name ?? ''}${e.provider?.model ? `/${e.provider.model}` : ''}${e.agent ? ` · agent ${e.agent}` : ''}`,
  'request.context': (e) => `agent ${e.context?.agent} · ${e.context?.workspace ?? 'no workspace'}${e.context?.git ? ` · git ${e.context.git.branch ?? 'detached'}` : ''} · ${e.context?.instructions?.length ?? 0} instruction file(s)`,
  'request.header': (e) => `step ${e.step} · ${e.header?.model ?? e.header?.provider} · ${e.header?.tools?.length ?? 0} tools · system ${e.header?.system?.length ?? 0} chars`,
  'turn.leased': (e) => `worker ${e.workerId} · token ${e.token}`,
  'turn.leaseLost': (e) => `worker ${e.workerId}: ${e.reason}`,
  'step.started': (e) => `step ${e.step}`,
  'response.started': (e) => `step ${e.step} · ${e.model ?? 'model ?'}`,
  'response.completed': (e) => `step ${e.step} · ${e.stopReason}${e.rawReason ? ` (${e.rawReason})` : ''}`,
  'tools.started': (e) => `step ${e.step} · ${e.toolCallIds?.length ?? 0} call(s)`,
  'step.finished': (e) => `step ${e.step} · ${e.outcome}${e.error ? ` · ${e.error}` : ''}${e.usage ? ` · ${e.usage.input}→${e.usage.output} tok` : ''}`,
  'turn.completed': (e) => e.stopReason,
  'turn.failed': (e) => e.error,
  'turn.interruptRequested': (e) => e.reason,
  'turn.interrupted': (e) => `${e.cause}: ${e.reason}`,
  'turn.summarized': (e) => `${shortId(e.settledTurnId)} ${quoted(e.summary)}`,
  'part.started': (e) => `${part(e)} ${e.kind}${e.toolName ? ` ${e.toolName}` : ''}`,
  'part.delta': (e) => `${part(e)} ${quoted(e.text)}`,
  'part.completed': (e) => part(e),
  'tool.inputDelta': (e) => `${part(e)} ${clip(e.text)}`,
  'tool.inputReady': (e) => `${part(e)} ${clip(e.input)}`,
  'tool.executing': (e) => part(e),
  'tool.result': (e) => `${part(e)} ${quoted(e.output ?? '')}`,
  'tool.failed': (e) => `${part(e)} ${e.error}`,
  'part.failed': (e) => `${part(e)} ${e.error}`,
  'part.interrupted': (e) => `${part(e)} ${e.reason}`,
  'approval.requested': (e) => `${e.toolName} ${e.kind}: ${clip(e.subject, 100)}`,
  'approval.granted': (e) => `by ${e.by}${e.note ? ` · ${quoted(e.note)}` : ''}`,
  'approval.denied': (e) => `by ${e.by}${e.note ? ` · ${quoted(e.note)}` : ''}`,
  'approval.cancelled': (e) => e.reason,
  'approval.undelivered': (e) => e.reason,
  'activity.recorded': (e) => `${e.kind}: ${e.message}`,
  'checkpoint.captured': (e) => `${e.side} ${String(e.commit).slice(0, 10)}${e.diff ? ` · ${changed(e.diff)}` : ''}`,
  'checkpoint.unavailable': (e) => e.reason,
  'checkpoint.reverted': (e) => `${e.turnIds?.length ?? 0} turn(s) · ${changed(e)} by ${e.by}`,
};

/** @param {{ type: string, [key: string]: any }} event */
export function summarize(event) {
  const make = summaries[event.type];
  if (make) {
    try {
      return clip(make(event) ?? '', 200);
    } catch {
      // An event of a newer engine with another shape: fall through to its fields.
    }
  }
  const { type: _type, turnId: _turnId, ...rest } = event;
  return Object.keys(rest).length ? clip(rest, 200) : '';
}
