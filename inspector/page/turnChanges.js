// @ts-check
/**
 * A turn's changes to the work tree, from its checkpoint (`checkpoint.diff`),
 * in a dialog over the page; and, where the page's token may operate, the
 * revert (`checkpoint.revert`) after a confirmation. A refusal is shown as
 * the API worded it, and the dialog stays usable.
 */
import { ApiError, call, describeError } from './api.js';
import { diffStat, renderPatch } from './diffView.js';
import { h, shortId } from './dom.js';

/**
 * @param {string} threadId
 * @param {string} turnId
 * @param {{ mayRevert: boolean, revertedAt: number | null, onReverted: () => void }} options
 */
export function openTurnChanges(threadId, turnId, options) {
  const close = h('button', { type: 'button', 'data-testid': 'diff-close', title: 'Close (Esc)' }, 'Close');
  const stat = h('span', { class: 'diff-summary' });
  const body = h('div', { class: 'dialog-body' }, h('div', { class: 'empty' }, 'Loading the diff…'));
  const footer = h('div', { class: 'dialog-footer' });
  const dialog = h('dialog', { class: 'turn-changes', 'data-testid': 'diff-view' },
    h('div', { class: 'dialog-head' }, h('b', {}, 'Changes of turn ', h('span', { class: 'mono', title: turnId }, shortId(turnId))), stat, h('span', { class: 'spacer' }), close),
    body, footer);
  close.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();

  call('checkpoint.diff', { threadId, checkpointId: turnId }).then((diff) => {
    stat.replaceChildren(`${diff.filesChanged} file${diff.filesChanged === 1 ? '' : 's'} `, diffStat(diff.additions, diff.deletions));
    body.replaceChildren(renderPatch(diff.patch));
    if (diff.truncated) body.append(h('div', { class: 'faint' }, 'The patch is cut here: the counts above are whole.'));
    if (diff.filesOmitted > 0) body.append(h('div', { class: 'faint' }, `${diff.filesOmitted} more changed files are counted but not listed.`));
    showRevert();
  }).catch((error) => {
    body.replaceChildren(h('div', { class: 'dialog-error', 'data-testid': 'diff-error' }, describeError(error)));
  });

  function showRevert() {
    if (options.revertedAt !== null) {
      footer.replaceChildren(h('span', { class: 'muted' }, 'Reverted: these changes are no longer in the work tree.'));
      return;
    }
    if (!options.mayRevert) return;
    const revert = h('button', { type: 'button', class: 'deny', 'data-testid': 'revert' }, 'Revert…');
    revert.addEventListener('click', () => confirmRevert(false));
    footer.replaceChildren(revert);
  }

  /** @param {boolean} force */
  function confirmRevert(force) {
    const yes = h('button', { type: 'button', class: 'deny', 'data-testid': 'revert-confirm' }, force ? 'Revert anyway' : 'Revert');
    const no = h('button', { type: 'button', 'data-testid': 'revert-cancel' }, 'Cancel');
    footer.replaceChildren(
      h('span', { class: 'confirm-text' }, force
        ? 'Files changed since will be put back too. The work tree as it is now is saved first.'
        : 'Put every file this turn (and any later turn still standing) changed back as it was before? Nothing else is touched; the work tree as it is now is saved first.'),
      h('span', { class: 'spacer' }), no, yes);
    no.addEventListener('click', showRevert);
    yes.addEventListener('click', () => void revert(force, yes, no));
  }

  /** @param {boolean} force @param {HTMLButtonElement} yes @param {HTMLButtonElement} no */
  async function revert(force, yes, no) {
    yes.disabled = true;
    no.disabled = true;
    try {
      const done = await call('checkpoint.revert', { threadId, checkpointId: turnId, ...(force ? { force } : {}) });
      footer.replaceChildren(h('span', { class: 'answer-ok', 'data-testid': 'revert-done' },
        `Reverted ${done.filesChanged} file${done.filesChanged === 1 ? '' : 's'} `, diffStat(done.additions, done.deletions),
        h('span', { class: 'muted' }, ` · the work tree before it is saved at ${done.saved?.ref ?? '?'}`)));
      options.onReverted();
    } catch (error) {
      footer.replaceChildren(h('span', { class: 'dialog-error', 'data-testid': 'revert-error' }, describeError(error)), h('span', { class: 'spacer' }));
      // Only files changed since stand in the way of a conflict, and the person may choose to lose them.
      if (error instanceof ApiError && error.code === 'conflict' && !force) {
        const again = h('button', { type: 'button', class: 'deny', 'data-testid': 'revert-force' }, 'Revert anyway…');
        again.addEventListener('click', () => confirmRevert(true));
        footer.append(again);
      }
    }
  }
}
