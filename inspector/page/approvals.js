// @ts-check
/** Pending approvals as cards with what they allow (a diff, a command) and Approve and Deny, answered through `approval.respond`. */
import { call, describeError } from './api.js';
import { renderPatch } from './diffView.js';
import { formatAgo, h, reconcile, shortId } from './dom.js';
import { showError } from './status.js';

/**
 * @typedef {{ kind: 'diff', path: string, patch: string, additions: number, deletions: number, created: boolean, cut: boolean }
 *   | { kind: 'command', command: string, cwd: string }
 *   | { kind: 'unavailable', reason: string }} ApprovalPreview
 * @typedef {{ id: string, threadId: string, turnId: string, state?: string, toolName: string, kind: string,
 *   subject: string, input: unknown, requestedAt: number, preview?: ApprovalPreview | null, parentThreadId?: string }} PendingApproval
 *   parentThreadId: a sub-agent's approval, listed with its parent's (it is answered on `threadId`, the sub-agent's)
 * @typedef {{ showThread: boolean, mayAnswer: boolean, onAnswered: () => void, link: (path: string, label: string, attrs?: Record<string, string>) => HTMLElement }} RowOptions
 */

/**
 * Keeps a list of approval rows in line with `approvals` (a row being
 * answered, or with a note being typed, stays as it is).
 * @param {HTMLElement} container
 * @param {PendingApproval[]} approvals
 * @param {RowOptions} options
 */
export function renderApprovals(container, approvals, options) {
  reconcile(container, approvals, (a) => `${a.threadId}/${a.id}`, (a) => approvalRow(a, options));
}

/** @param {PendingApproval} approval @param {RowOptions} options */
function approvalRow(approval, options) {
  const input = JSON.stringify(approval.input ?? null);
  const note = h('input', { 'data-testid': 'deny-note', type: 'text', placeholder: 'note for the model', title: 'Why it is refused: the model reads this' });
  const approve = h('button', { 'data-testid': 'approve', class: 'approve', type: 'button', title: 'Run this call once' }, 'Approve');
  const deny = h('button', { 'data-testid': 'deny', class: 'deny', type: 'button', title: 'Refuse this call (the note reaches the model)' }, 'Deny');
  const answer = h('div', { class: 'answer-error' });
  const row = h('div', { class: 'approval', 'data-testid': 'approval', 'data-approval-id': approval.id, 'data-thread-id': approval.threadId },
    h('div', { class: 'what' },
      h('div', {}, h('span', { class: 'tool' }, approval.toolName), ' ', h('span', { class: 'state-tag' }, approval.kind)),
      // A diff names its file and a command preview shows its line: the subject would say it twice.
      shows(approval.preview) ? null : h('div', { class: 'subject', title: input }, approval.subject || input),
      approval.preview ? preview(approval.preview) : null,
      approval.subject && input.length > 2 && !approval.preview ? h('div', { class: 'input mono faint', title: input }, input.length > 160 ? `${input.slice(0, 159)}…` : input) : null,
      approval.parentThreadId ? subagentMark(approval.threadId, approval.parentThreadId, options.link) : null,
      h('div', { class: 'meta' },
        options.showThread && !approval.parentThreadId ? options.link(`/threads/${approval.threadId}`, `thread ${shortId(approval.threadId)}`, { title: approval.threadId }) : null,
        options.showThread && !approval.parentThreadId ? ' · ' : null,
        h('span', { title: approval.turnId }, `turn ${shortId(approval.turnId)}`),
        ' · ', h('span', { title: new Date(approval.requestedAt).toISOString() }, `asked ${formatAgo(approval.requestedAt)}`))),
    options.mayAnswer
      ? h('div', { class: 'actions' }, approve, note, deny)
      : h('div', { class: 'faint', 'data-testid': 'approval-read-only' }, 'the page’s token may not answer approvals (no approve scope)'),
    answer);

  /** @param {'once' | 'deny'} decision */
  const respond = async (decision) => {
    approve.disabled = true;
    deny.disabled = true;
    answer.textContent = '';
    try {
      await call('approval.respond', {
        threadId: approval.threadId,
        approvalId: approval.id,
        decision,
        note: decision === 'deny' && note.value.trim() ? note.value.trim() : null,
      });
      row.classList.add('answered');
      answer.className = 'answer-ok';
      answer.textContent = decision === 'deny' ? 'denied — waiting for the engine' : 'approved — waiting for the engine';
      options.onAnswered();
    } catch (error) {
      const message = `approval ${shortId(approval.id)}: ${describeError(error)}`;
      answer.className = 'answer-error';
      answer.textContent = message;
      showError(message);
      approve.disabled = false;
      deny.disabled = false;
      options.onAnswered();
    }
  };
  approve.addEventListener('click', () => void respond('once'));
  deny.addEventListener('click', () => void respond('deny'));
  note.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') void respond('deny');
  });
  return row;
}

/**
 * A sub-agent asks in its own thread: the card says whose it is, since the
 * page it is answered from (its parent's, the overview) is not that thread.
 * @param {string} threadId @param {string} parentThreadId @param {RowOptions['link']} link
 */
function subagentMark(threadId, parentThreadId, link) {
  return h('div', { class: 'subagent-mark', 'data-testid': 'approval-subagent' },
    'sub-agent thread ', link(`/threads/${threadId}`, shortId(threadId), { title: threadId }),
    ', delegated by ', link(`/threads/${parentThreadId}`, shortId(parentThreadId), { title: parentThreadId }));
}

/** @param {ApprovalPreview | null | undefined} p */
const shows = (p) => p?.kind === 'diff' || p?.kind === 'command';

/**
 * What answering yes would do, as the worker saw it when it asked: the
 * file's diff, the command and the folder it runs in, or why it could not tell.
 * @param {ApprovalPreview} p
 */
function preview(p) {
  if (p.kind === 'diff') {
    const notes = [p.created ? 'a new file' : null, p.cut ? 'the patch is cut here; its counts are whole' : null].filter(Boolean).join(' · ');
    return h('div', { class: 'preview', 'data-testid': 'approval-preview', 'data-kind': 'diff' },
      renderPatch(p.patch, { testid: 'approval-diff' }),
      notes ? h('div', { class: 'preview-head' }, notes) : null);
  }
  if (p.kind === 'command') {
    return h('div', { class: 'preview', 'data-testid': 'approval-preview', 'data-kind': 'command' },
      h('div', { class: 'preview-head' }, 'runs in ', h('span', { class: 'mono' }, p.cwd === '.' ? 'the workspace root' : p.cwd), ':'),
      h('pre', { class: 'command' }, h('span', { class: 'prompt' }, '$ '), p.command));
  }
  return h('div', { class: 'preview unavailable', 'data-testid': 'approval-preview', 'data-kind': 'unavailable' }, 'no preview: ', p.reason);
}
