// @ts-check
/**
 * A thread's place in its tree of sub-agents: on a child's page the call
 * that delegated it, and on every page the calls it delegated, nested with
 * the calls those made, each linking to its thread.
 *
 * A direct child's status is in this thread's own view (its `task.settled`
 * lands in this log), so it is drawn as soon as the view changes. Deeper
 * calls are in their parents' views, which only `thread.get` of each child
 * gives: fetched when this view changes and every REFRESH_MS while a call of
 * the tree runs (a settled child's view is not fetched again), at most
 * MAX_THREADS of them. A running child is also where an approval may wait
 * that this thread's log never mentions: `approval.list` of this thread
 * lists its children's, and is asked on the same beat.
 */
import { call, describeError } from './api.js';
import { h, shortId } from './dom.js';
import { showError } from './status.js';
import { hasThread, taskLabel } from './taskCall.js';

const REFRESH_MS = 2_000;
/** A view that changes many times a second (text streaming) brings one refresh, not one each. */
const SOON_MS = 250;
/** The most children's views one page fetches (the default tree is 2 deep, a turn starts at most 8). */
const MAX_THREADS = 50;

/**
 * @typedef {import('./threadModel.js').ThreadView} ThreadView
 * @typedef {import('./threadModel.js').TaskView} TaskView
 * @typedef {import('./approvals.js').PendingApproval} PendingApproval
 * @typedef {import('./overview.js').LinkMaker} LinkMaker
 * @typedef {{ turnId: string, partId: string, task: TaskView }} Delegation
 * @typedef {Delegation & { children: TreeNode[], asking: number }} TreeNode a delegated call, the calls its child delegated (as far as
 *   fetched), and how many approvals its child waits for
 */

/** The calls a thread delegated, oldest first. @param {ThreadView} view @returns {Delegation[]} */
function delegations(view) {
  return view.turnIds.flatMap((turnId) =>
    (view.turns[turnId]?.messages[1]?.parts ?? []).flatMap((part) => (part.task ? [{ turnId, partId: part.id, task: part.task }] : [])));
}

/** A child's view is worth fetching again while it, or a call below it, may still change. @param {Delegation} d @param {ThreadView | undefined} view */
const stale = (d, view) => !view || view.openTurnId !== null || d.task.status === 'running';

export class Subagents {
  /**
   * @param {string} threadId
   * @param {{ link: LinkMaker, onApprovals: (approvals: PendingApproval[]) => void }} options
   *   onApprovals: the children's pending approvals (not this thread's own), whenever asked again
   */
  constructor(threadId, options) {
    this.threadId = threadId;
    this.options = options;
    /** @type {ThreadView | null} */
    this.view = null;
    /** The children's views (and theirs), as last fetched. @type {Map<string, ThreadView>} */
    this.children = new Map();
    /** Delegated calls the budget left unfetched at the last refresh. */
    this.unfetched = 0;
    this.stopped = false;
    this.busy = false;
    this.again = false;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    this.due = 0;
    this.up = h('div', { class: 'delegated-by', 'data-testid': 'delegated-by', hidden: true });
    this.tree = h('div', { class: 'subagent-tree', 'data-testid': 'subagents' });
    this.count = h('span', { class: 'count' });
    this.element = h('section', { class: 'panel subagents-panel', hidden: true }, h('h2', {}, 'Sub-agents', this.count), this.up, this.tree);
  }

  /** The thread's fresh view: drawn at once, the children's views fetched soon after. @param {ThreadView} view */
  update(view) {
    if (view === this.view) return;
    this.view = view;
    this.render();
    this.soon();
  }

  /** Asks again shortly (a child's approval was answered, which this thread's log will not say). */
  soon() {
    this.schedule(SOON_MS);
  }

  /** Asks again after `ms`, unless it is to ask sooner already. @param {number} ms */
  schedule(ms) {
    const due = Date.now() + ms;
    if (this.stopped || (this.timer !== undefined && this.due <= due)) return;
    clearTimeout(this.timer);
    this.due = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, ms);
  }

  async refresh() {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      await this.fetchChildren();
      const pending = running(this.nodes()) ? await call('approval.list', { threadId: this.threadId, limit: 100 }) : null;
      if (this.stopped) return;
      this.options.onApprovals((pending?.approvals ?? []).filter((/** @type {PendingApproval} */ a) => a.parentThreadId !== undefined));
    } catch (error) {
      if (!this.stopped) showError(`sub-agents of ${shortId(this.threadId)}: ${describeError(error)}`);
    } finally {
      this.busy = false;
    }
    if (this.stopped) return;
    this.render();
    if (this.again) {
      this.again = false;
      this.soon();
    } else if (running(this.nodes())) {
      this.schedule(REFRESH_MS);
    }
  }

  /** Level by level, the children's views that may have changed, within the budget. */
  async fetchChildren() {
    let level = this.view ? delegations(this.view).filter((d) => hasThread(d.task)) : [];
    let budget = MAX_THREADS;
    while (level.length > 0 && budget > 0) {
      const taken = level.slice(0, budget);
      budget -= taken.length;
      const ids = taken.filter((d) => stale(d, this.children.get(d.task.childThreadId))).map((d) => d.task.childThreadId);
      const answers = await Promise.allSettled(ids.map((id) => call('thread.get', { threadId: id })));
      if (this.stopped) return;
      answers.forEach((answer, index) => {
        if (answer.status === 'fulfilled') this.children.set(/** @type {string} */ (ids[index]), answer.value.thread);
        // A child the engine has not made yet is not an error: the next refresh finds it.
        else if (answer.reason?.code !== 'not_found') showError(`sub-agent ${shortId(ids[index])}: ${describeError(answer.reason)}`);
      });
      level = taken.flatMap((d) => {
        const child = this.children.get(d.task.childThreadId);
        return child ? delegations(child).filter((c) => hasThread(c.task)) : [];
      });
    }
    this.unfetched = level.length;
  }

  /** The tree as far as it is known. @returns {TreeNode[]} */
  nodes() {
    /** Child ids are derived from their parent's, so a thread cannot be its own ancestor; a log that says otherwise is not followed round. */
    const seen = new Set([this.threadId]);
    /** @param {ThreadView} view @returns {TreeNode[]} */
    const below = (view) => delegations(view).map((d) => {
      const child = this.children.get(d.task.childThreadId);
      const fresh = child && !seen.has(child.id);
      if (fresh) seen.add(child.id);
      return { ...d, children: fresh ? below(child) : [], asking: fresh && d.task.status === 'running' ? pendingIn(child) : 0 };
    });
    return this.view ? below(this.view) : [];
  }

  render() {
    const view = this.view;
    if (!view) return;
    const parent = view.parent ?? null;
    this.up.hidden = !parent;
    if (parent) {
      this.up.replaceChildren(
        '↑ delegated by ',
        this.options.link(`/threads/${parent.threadId}`, `thread ${shortId(parent.threadId)}`, { title: parent.threadId, 'data-testid': 'parent-thread' }),
        h('span', { title: parent.turnId }, ` (turn ${shortId(parent.turnId)})`),
        ' · ',
        h('b', { 'data-testid': 'depth' }, `depth ${parent.depth}`));
    }
    const tree = this.nodes();
    const all = flatten(tree);
    const base = parent?.depth ?? 0;
    this.tree.replaceChildren(...tree.map((node) => this.row(node, base + 1)));
    if (this.unfetched) this.tree.append(h('div', { class: 'faint subagent-more' }, `${this.unfetched} more below, not fetched (at most ${MAX_THREADS} threads)`));
    const open = all.filter((node) => node.task.status === 'running').length;
    this.count.textContent = all.length ? `${all.length} delegated${open ? ` · ${open} running` : ''}` : '';
    this.element.hidden = !parent && tree.length === 0;
  }

  /** @param {TreeNode} node @param {number} depth its depth in the whole tree @returns {HTMLElement} */
  row(node, depth) {
    const { task } = node;
    return h('div', { class: 'subagent', 'data-testid': 'subagent', 'data-status': task.status, 'data-thread-id': task.childThreadId, 'data-depth': depth },
      h('div', { class: 'subagent-line', title: `turn ${node.turnId}, part ${node.partId}\n${task.prompt}` },
        h('span', { class: 'task-status', 'data-status': task.status }, task.status),
        h('span', { class: 'agent' }, task.agent),
        h('span', { class: 'what' }, taskLabel(task)),
        node.asking ? h('span', { class: 'asking', 'data-testid': 'subagent-asking' }, node.asking === 1 ? 'waits for an approval' : `waits for ${node.asking} approvals`) : null,
        hasThread(task)
          ? this.options.link(`/threads/${task.childThreadId}`, `thread ${shortId(task.childThreadId)}`, { title: task.childThreadId, 'data-testid': 'subagent-link' })
          : h('span', { class: 'faint' }, 'no thread')),
      task.error && task.status !== 'completed' ? h('div', { class: 'subagent-error', title: task.error }, task.error) : null,
      node.children.length ? h('div', { class: 'subagent-children' }, ...node.children.map((child) => this.row(child, depth + 1))) : null);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** @param {ThreadView} view */
const pendingIn = (view) => view.turnIds.reduce((sum, turnId) => sum + (view.turns[turnId]?.approvals.filter((a) => a.state === 'pending').length ?? 0), 0);

/** @param {TreeNode[]} nodes @returns {TreeNode[]} */
const flatten = (nodes) => nodes.flatMap((node) => [node, ...flatten(node.children)]);

/** @param {TreeNode[]} nodes */
const running = (nodes) => flatten(nodes).some((node) => node.task.status === 'running');
