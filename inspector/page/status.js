// @ts-check
/** The header's indicators: the connection status, the relay's bus, and the last error shown to the user. */

/** @typedef {'live' | 'catching up' | 'reconnecting' | 'connecting' | 'failed' | 'closed' | 'polling' | 'relay unreachable'} ConnectionStatus */

const tone = /** @type {Record<string, string>} */ ({
  live: 'ok',
  'catching up': 'warn',
  connecting: 'warn',
  reconnecting: 'warn',
  failed: 'bad',
  closed: 'idle',
  polling: 'ok',
  'relay unreachable': 'bad',
  connected: 'ok',
  disconnected: 'bad',
});

/** @param {string} selector */
const el = (selector) => /** @type {HTMLElement} */ (document.querySelector(selector));

/** @param {ConnectionStatus} status @param {string} [detail] */
export function setStatus(status, detail) {
  const pill = el('[data-testid=status]');
  pill.textContent = status;
  pill.className = `pill ${tone[status] ?? 'idle'}`;
  pill.title = detail ?? '';
}

/** The relay's own link to the bus; `null` hides it (the overview has no stream). @param {string | null} bus */
export function setBus(bus) {
  const pill = el('#bus-status');
  pill.hidden = bus === null;
  pill.textContent = `bus ${bus ?? ''}`;
  pill.className = `pill ${tone[bus ?? ''] ?? 'warn'}`;
}

/** Shows an error until the next one, or until dismissed. Never only in the console. @param {string} message */
export function showError(message) {
  const box = el('[data-testid=page-error]');
  box.textContent = `${new Date().toTimeString().slice(0, 8)} ${message}`;
  box.title = message;
  el('#page-error').hidden = false;
}

export function clearError() {
  el('[data-testid=page-error]').textContent = '';
  el('#page-error').hidden = true;
}
