// @ts-check
/** The overview: threads (paged), live workers and pending approvals, refreshed every 2 s. */
import { call, describeError } from './api.js';
import { renderApprovals } from './approvals.js';
import { formatAgo, h, reconcile, shortId } from './dom.js';
import { setBus, setStatus, showError } from './status.js';

const PAGE = 50;
const REFRESH_MS = 2_000;

/**
 * @typedef {{ id: string, title: string, owner: string | null, environment: string, archived: boolean, createdAt: number,
 *   updatedAt: number, seq: number, sessionState: string, openTurnId: string | null, turnCount: number }} ThreadSummary
 * @typedef {{ workerId: string, environment: string, workspace: string | null, host: string, pid: number, capacity: number,
 *   runningTurns: number, lastHeartbeat: number, live: boolean }} WorkerInfo
 * @typedef {(path: string, label: string | Node, attrs?: Record<string, string>) => HTMLElement} LinkMaker
 * @typedef {(scope: string) => boolean} Grants whether the page's token has a scope
 */

/** @param {HTMLElement} root @param {{ link: LinkMaker, navigate: (path: string) => void, may: Grants }} nav */
export function mountOverview(root, nav) {
  /** @type {ThreadSummary[]} */
  let threads = [];
  /** @type {string | null} */
  let nextCursor = null;
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;

  const threadList = h('div', { class: 'thread-list', 'data-testid': 'threads' });
  const threadCount = h('span', { class: 'count' });
  const threadsEmpty = h('div', { class: 'empty' }, 'No threads yet.');
  const more = h('button', { 'data-testid': 'threads-more', type: 'button', hidden: true }, 'More');
  const workerList = h('div', { class: 'worker-list', 'data-testid': 'workers' });
  const workerCount = h('span', { class: 'count' });
  const workersEmpty = h('div', { class: 'empty' }, 'No worker has been heard from.');
  const approvalList = h('div', { 'data-testid': 'approvals' });
  const approvalCount = h('span', { class: 'count' });
  const approvalsEmpty = h('div', { class: 'empty' }, 'Nothing waits for an answer.');
  const newTitle = h('input', { 'data-testid': 'new-thread-title', type: 'text', placeholder: 'title (optional)', maxlength: 200 });
  const create = h('button', { 'data-testid': 'new-thread', type: 'button', title: 'Create a thread and open it (thread.create)' }, 'New thread');

  root.replaceChildren(h('div', { class: 'overview' },
    h('section', { class: 'panel' },
      h('h2', {}, 'Threads', threadCount, h('span', { class: 'spacer' }),
        nav.may('operate') ? h('span', { class: 'new-thread' }, newTitle, create) : null),
      h('div', { class: 'thread-head' },
        h('span', {}, 'title'), h('span', {}, 'id'), h('span', {}, 'session'), h('span', {}, 'open turn'),
        h('span', { class: 'num' }, 'turns'), h('span', { class: 'num' }, 'seq'), h('span', {}, 'updated')),
      threadList, threadsEmpty,
      h('div', { class: 'more-row' }, more)),
    h('div', { class: 'side' },
      h('section', { class: 'panel approvals-panel' }, h('h2', {}, 'Pending approvals', approvalCount), approvalList, approvalsEmpty),
      h('section', { class: 'panel' }, h('h2', {}, 'Workers', workerCount), workerList, workersEmpty))));
  setBus(null);
  setStatus('polling', 'the overview asks the relay every 2 s');

  function renderThreads() {
    reconcile(threadList, threads, (t) => t.id, (t) => nav.link(`/threads/${t.id}`, '', { 'data-testid': 'thread-row', 'data-thread-id': t.id, class: 'thread-row' }), fillThread);
    threadsEmpty.hidden = threads.length > 0;
    threadCount.textContent = `${threads.length}${nextCursor ? '+' : ''}`;
    more.hidden = !nextCursor;
  }

  /** @param {HTMLElement} row @param {ThreadSummary} t */
  function fillThread(row, t) {
    const live = t.openTurnId !== null;
    row.replaceChildren(
      h('span', { class: 'thread-title', title: t.title }, t.title || '(untitled)', t.archived ? h('span', { class: 'faint' }, ' · archived') : null),
      h('span', { class: 'mono muted', title: t.id }, shortId(t.id)),
      h('span', {}, h('span', { class: `state-tag${t.sessionState === 'running' ? ' live' : t.sessionState === 'error' ? ' bad' : ''}` }, t.sessionState)),
      h('span', { class: 'mono', title: t.openTurnId ?? '' }, live ? h('span', { class: 'state-tag live' }, shortId(t.openTurnId)) : h('span', { class: 'faint' }, '—')),
      h('span', { class: 'num' }, t.turnCount),
      h('span', { class: 'num mono faint' }, t.seq),
      h('span', { class: 'faint', title: new Date(t.updatedAt).toISOString() }, formatAgo(t.updatedAt)));
  }

  /** @param {WorkerInfo[]} workers */
  function renderWorkers(workers) {
    const sorted = [...workers].sort((a, b) => Number(b.live) - Number(a.live) || a.workerId.localeCompare(b.workerId));
    reconcile(workerList, sorted, (w) => w.workerId, () => h('div', { class: 'worker', 'data-testid': 'worker-row' }), (el, w) => {
      el.dataset.workerId = w.workerId;
      el.classList.toggle('gone', !w.live);
      el.replaceChildren(
        h('span', { class: `dot ${w.live ? 'live' : ''}`, title: w.live ? 'live' : 'not heard from lately' }),
        h('span', { class: 'mono', title: w.workerId }, w.workerId),
        h('span', { class: 'muted' }, w.environment),
        h('span', { class: 'muted', title: w.workspace ?? '' }, `${w.host}:${w.pid}`),
        h('span', { class: 'num', title: 'running turns / capacity' }, `${w.runningTurns}/${w.capacity}`),
        h('span', { class: 'faint', title: new Date(w.lastHeartbeat).toISOString() }, formatAgo(w.lastHeartbeat)));
    });
    workersEmpty.hidden = workers.length > 0;
    workerCount.textContent = `${workers.filter((w) => w.live).length} live`;
  }

  async function refresh() {
    const [list, workers, approvals] = await Promise.allSettled([
      call('thread.list', { limit: PAGE }),
      call('worker.list', {}),
      call('approval.list', { limit: 100 }),
    ]);
    if (stopped) return;
    const failures = [list, workers, approvals].filter((r) => r.status === 'rejected');
    setStatus(failures.length === 3 ? 'relay unreachable' : 'polling', 'the overview asks the relay every 2 s');
    if (failures[0]) showError(describeError(/** @type {PromiseRejectedResult} */ (failures[0]).reason));
    if (list.status === 'fulfilled') {
      // The first page is fresh; pages loaded with More stay until the page reloads.
      const fresh = /** @type {ThreadSummary[]} */ (list.value.threads);
      const ids = new Set(fresh.map((t) => t.id));
      if (threads.length <= fresh.length) nextCursor = list.value.nextCursor;
      threads = [...fresh, ...threads.filter((t) => !ids.has(t.id))];
      renderThreads();
    }
    if (workers.status === 'fulfilled') renderWorkers(workers.value.workers);
    if (approvals.status === 'fulfilled') {
      const pending = approvals.value.approvals;
      renderApprovals(approvalList, pending, { showThread: true, mayAnswer: nav.may('approve'), onAnswered: () => void refresh().catch(() => {}), link: nav.link });
      approvalsEmpty.hidden = pending.length > 0;
      approvalCount.textContent = `${pending.length}${approvals.value.nextCursor ? '+' : ''}`;
    }
  }

  async function loop() {
    try {
      await refresh();
    } catch (error) {
      showError(describeError(error));
    }
    if (!stopped) timer = setTimeout(loop, REFRESH_MS);
  }

  async function createThread() {
    create.disabled = true;
    try {
      const title = newTitle.value.trim();
      const { threadId } = await call('thread.create', title ? { title } : {});
      nav.navigate(`/threads/${threadId}`);
    } catch (error) {
      showError(`new thread: ${describeError(error)}`);
      create.disabled = false;
    }
  }
  create.addEventListener('click', () => void createThread());
  newTitle.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') void createThread();
  });

  more.addEventListener('click', async () => {
    if (!nextCursor) return;
    more.disabled = true;
    try {
      const page = await call('thread.list', { limit: PAGE, cursor: nextCursor });
      const ids = new Set(threads.map((t) => t.id));
      threads = [...threads, ...page.threads.filter((/** @type {ThreadSummary} */ t) => !ids.has(t.id))];
      nextCursor = page.nextCursor;
      renderThreads();
    } catch (error) {
      showError(describeError(error));
    } finally {
      more.disabled = false;
    }
  });

  void loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
