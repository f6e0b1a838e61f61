// @ts-check
/** The inspector page: routes `/` to the overview and `/threads/<id>` to one thread. */
import { h } from './dom.js';
import { mountOverview } from './overview.js';
import { loadGrant, showGrant } from './scopes.js';
import { clearError } from './status.js';
import { mountThread } from './threadView.js';

const root = /** @type {HTMLElement} */ (document.getElementById('root'));
const crumb = /** @type {HTMLElement} */ (document.getElementById('crumb'));
/** @type {(() => void) | null} */
let unmount = null;

/**
 * A link the page follows itself (history.pushState), so the relay is asked
 * for data, not for the page again; a modified click still opens a new tab.
 * @param {string} path @param {string | Node} label @param {Record<string, string>} [attrs]
 */
function link(path, label, attrs = {}) {
  const a = h('a', { ...attrs, href: path }, label);
  a.addEventListener('click', (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(path);
  });
  return a;
}

/** @param {string} path */
function navigate(path) {
  if (path !== location.pathname) history.pushState(null, '', path);
  route();
}

/** @param {Node | string} node */
function setCrumb(node) {
  crumb.replaceChildren(node);
}

// Known before anything is drawn, so a control the token may not use is never shown, not even for a moment.
const grant = await loadGrant();
showGrant(/** @type {HTMLElement} */ (document.getElementById('who')), grant);
/** @param {string} scope */
const may = (scope) => grant.scopes.has(scope);

function route() {
  unmount?.();
  unmount = null;
  clearError();
  const match = /^\/threads\/([^/]+)\/?$/.exec(location.pathname);
  if (match) {
    const threadId = decodeURIComponent(/** @type {string} */ (match[1]));
    document.title = `${threadId} · turnloom inspector`;
    unmount = mountThread(root, threadId, { link, setCrumb, may });
  } else {
    document.title = 'turnloom inspector';
    setCrumb('overview');
    unmount = mountOverview(root, { link, navigate, may });
  }
}

document.getElementById('home')?.addEventListener('click', (event) => {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate('/');
});
document.getElementById('page-error-close')?.addEventListener('click', clearError);
window.addEventListener('popstate', route);
route();
