// @ts-check
/**
 * One thread, live: its four charts with the actors' states, the actors, its
 * pending approvals, the streaming text and the timeline. Follows the
 * snapshot-and-sequence rule: `thread.get` for the view, the stream for what
 * comes after, the view fetched again when the stream passes it.
 */
import { call, describeError, fetchCharts } from './api.js';
import { renderApprovals } from './approvals.js';
import { placeLabels, renderChart, setActive, setFired } from './charts.js';
import { createComposer } from './composer.js';
import { diffStat } from './diffView.js';
import { h, reconcile, shortId } from './dom.js';
import { LiveText } from './liveText.js';
import { setBus, setStatus, showError } from './status.js';
import { openThreadStream } from './stream.js';
import { Subagents } from './subagents.js';
import { ThreadModel } from './threadModel.js';
import { Timeline } from './timeline.js';
import { openTurnChanges } from './turnChanges.js';

const REFETCH_MS = 150;

/**
 * @typedef {import('./charts.js').ChartLayout} ChartLayout
 * @typedef {import('./stream.js').StoredEvent} StoredEvent
 * @typedef {import('./stream.js').Inspection} Inspection
 * @typedef {import('./overview.js').LinkMaker} LinkMaker
 * @typedef {{ svg: SVGSVGElement, layout: ChartLayout, full: ChartLayout, fitted: ChartLayout, panel: HTMLElement, subject: HTMLElement,
 *   fired: HTMLElement, scroller: HTMLElement, focus: string }} Chart
 */

/**
 * @param {HTMLElement} root @param {string} threadId
 * @param {{ link: LinkMaker, setCrumb: (node: Node | string) => void, may: import('./overview.js').Grants }} nav
 */
export function mountThread(root, threadId, nav) {
  const model = new ThreadModel();
  const timeline = new Timeline({ onSelectTurn: (turnId) => selectTurn(turnId, true) });
  const liveText = new LiveText(nav.link);
  /** @type {import('./approvals.js').PendingApproval[]} */
  let childApprovals = [];
  const subagents = new Subagents(threadId, {
    link: nav.link,
    onApprovals(approvals) {
      childApprovals = approvals;
      schedule();
    },
  });
  /** @type {Map<string, Chart>} */
  const charts = new Map();
  /** @type {Map<string, Set<string>>} machine → its final states */
  const finals = new Map();
  let stopped = false;
  let caughtUp = false;
  let failed = false;
  let lastSeq = 0;
  /** @type {string | null} */
  let selectedTurn = null;
  /** Follow the newest turn until the user picks an older one. */
  let followNewest = true;
  /** @type {any} */
  let work = null;
  let frame = 0;
  /** @type {{ close(): void } | null} */
  let stream = null;

  const title = h('span', { class: 'thread-title' }, threadId);
  const meta = h('span', { class: 'thread-meta' });
  const turnSelect = h('select', { 'data-testid': 'select-turn', title: 'The turn the turn, part and approval charts show' });
  const interrupt = h('button', { type: 'button', hidden: true, title: 'Ask the engine to stop the open turn (turn.interrupt)' }, 'Interrupt turn');
  const changes = h('button', { type: 'button', hidden: true, 'data-testid': 'open-diff', title: 'What the selected turn changed in the work tree, from its checkpoint' });
  const composer = nav.may('operate') ? createComposer(threadId, { onSent: scheduleRefetch }) : null;
  const fit = h('label', { class: 'fit', title: 'Lay the charts out to fit the column: only the active states’ edges are labelled, the others on hover' }, h('input', { type: 'checkbox', 'data-testid': 'fit-charts' }), ' fit charts');
  const chartColumn = h('div', { class: 'charts' }, h('div', { class: 'empty' }, 'Loading the charts…'));
  const actorList = h('div', { class: 'actors', 'data-testid': 'actors' });
  const approvalList = h('div', { 'data-testid': 'thread-approvals' });
  const approvalsEmpty = h('div', { class: 'empty' }, 'Nothing waits for an answer.');
  const approvalCount = h('span', { class: 'count' });

  root.replaceChildren(h('div', { class: 'thread' },
    h('div', { class: 'main-col' },
      h('section', { class: 'panel thread-bar' },
        title, meta, h('span', { class: 'spacer' }),
        h('label', { class: 'muted' }, 'turn ', turnSelect), changes, interrupt, fit),
      subagents.element,
      chartColumn),
    h('div', { class: 'side' },
      h('section', { class: 'panel actors-panel' }, h('h2', {}, 'Actors'), actorList),
      h('section', { class: 'panel approvals-panel' }, h('h2', {}, 'Pending approvals', approvalCount), approvalList, approvalsEmpty),
      liveText.element,
      composer?.element,
      timeline.element)));
  nav.setCrumb(h('span', {}, 'thread ', h('b', { title: threadId }, threadId)));
  setStatus('connecting');
  setBus(null);

  turnSelect.addEventListener('change', () => selectTurn(turnSelect.value, true));
  const fitBox = /** @type {HTMLInputElement} */ (fit.querySelector('input'));
  fitBox.checked = localStorage.getItem('turnloom.fitCharts') === '1';
  fitBox.addEventListener('change', () => {
    localStorage.setItem('turnloom.fitCharts', fitBox.checked ? '1' : '0');
    chartColumn.classList.toggle('fit', fitBox.checked);
    for (const chart of charts.values()) {
      Object.assign(chart, drawn(chart.full, chart.fitted), { focus: '' });
      chart.scroller.replaceChildren(chart.svg);
    }
    schedule();
  });
  chartColumn.classList.toggle('fit', fitBox.checked);

  /** A chart in the layout the fit box asks for; the next render highlights it. @param {ChartLayout} full @param {ChartLayout} fitted */
  function drawn(full, fitted) {
    return fitBox.checked ? { layout: fitted, svg: renderChart(fitted, true) } : { layout: full, svg: renderChart(full) };
  }
  changes.addEventListener('click', () => {
    const turn = selectedTurn ? model.turn(selectedTurn) : null;
    if (!turn) return;
    openTurnChanges(threadId, turn.id, { mayRevert: nav.may('operate'), revertedAt: turn.revertedAt ?? null, onReverted: scheduleRefetch });
  });
  interrupt.addEventListener('click', async () => {
    interrupt.disabled = true;
    try {
      await call('turn.interrupt', { threadId, ...(model.view?.openTurnId ? { turnId: model.view.openTurnId } : {}) });
    } catch (error) {
      showError(`interrupt: ${describeError(error)}`);
    } finally {
      interrupt.disabled = false;
    }
  });

  /** @param {string} turnId @param {boolean} byUser */
  function selectTurn(turnId, byUser) {
    selectedTurn = turnId;
    if (byUser) followNewest = turnId === model.turnIds()[0];
    turnSelect.value = turnId;
    schedule();
  }

  fetchCharts().then(({ machines, fitted }) => {
    if (stopped) return;
    chartColumn.replaceChildren();
    machines.forEach((layout, index) => {
      const subject = h('span', { class: 'subject' });
      const fired = h('span', { class: 'fired-note' });
      const shapes = { full: layout, fitted: fitted[index] ?? layout };
      const chart = { ...shapes, ...drawn(shapes.full, shapes.fitted) };
      const scroller = h('div', { class: 'chart-scroll' }, chart.svg);
      const panel = h('section', { class: 'panel chart-panel', 'data-machine': layout.machine },
        h('h2', {}, layout.machine, subject, h('span', { class: 'desc', title: layout.description }, layout.description), h('span', { class: 'spacer' }), fired),
        scroller);
      chartColumn.append(panel);
      charts.set(layout.machine, { ...chart, panel, subject, fired, scroller, focus: '' });
      finals.set(layout.machine, new Set(layout.states.filter((s) => s.final).map((s) => s.path)));
    });
    schedule();
  }).catch((error) => {
    chartColumn.replaceChildren(h('div', { class: 'empty' }, `The charts did not load: ${describeError(error)}`));
    showError(`charts: ${describeError(error)}`);
  });

  // The view: fetched at once, then again (at most every REFETCH_MS) whenever the stream passes it.
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let refetchTimer;
  let fetching = false;
  let again = false;
  function scheduleRefetch() {
    if (refetchTimer !== undefined || stopped) return;
    refetchTimer = setTimeout(() => {
      refetchTimer = undefined;
      void refetch();
    }, REFETCH_MS);
  }
  async function refetch() {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      const answer = await call('thread.get', { threadId });
      if (stopped) return;
      model.setView(answer.thread, answer.seq);
      work = answer.work ?? null;
      schedule();
    } catch (error) {
      if (!stopped) showError(`thread ${shortId(threadId)}: ${describeError(error)}`);
    } finally {
      fetching = false;
      if (again && !stopped) {
        again = false;
        scheduleRefetch();
      }
    }
  }

  /** @param {number} after */
  function openStream(after) {
    stream?.close();
    caughtUp = false;
    stream = openThreadStream(threadId, after, {
      event(stored) {
        // The relay sends each event once, but a reconnection may overlap what was already shown.
        if (stored.threadSeq <= lastSeq) return;
        lastSeq = stored.threadSeq;
        model.noteEvent(stored);
        const e = stored.event;
        const diagnostic = e.type === 'activity.recorded' && e.kind === 'diagnostic';
        timeline.append([{
          seq: stored.threadSeq,
          at: stored.at,
          type: e.type,
          turnId: typeof e.turnId === 'string' ? e.turnId : null,
          refused: diagnostic,
          reason: diagnostic ? `refused: ${e.message}` : null,
          event: stored.event,
        }]);
        if (caughtUp && stored.threadSeq > model.viewSeq) scheduleRefetch();
        schedule();
      },
      caughtUp(seq) {
        caughtUp = true;
        if (seq > model.viewSeq || !model.view) scheduleRefetch();
      },
      live(delta) {
        liveText.add(delta);
        schedule();
      },
      inspect(inspection) {
        model.applyInspection(inspection);
        if (inspection.outcome === 'rejected') timeline.append(refusals(inspection));
        schedule();
      },
      relay(bus) {
        setBus(bus);
      },
      failed(code, message) {
        failed = true;
        setStatus('failed', message);
        showError(`thread ${shortId(threadId)}: ${code}: ${message}`);
      },
      status(status) {
        if (!failed) setStatus(status);
      },
    });
  }

  /** A command the machines refused whole wrote nothing: its refusals have no seq. @param {Inspection} inspection */
  function refusals(inspection) {
    const entries = inspection.refused?.length ? inspection.refused : [{ machine: '', actorId: null, state: '', event: inspection.command, reason: 'rejected' }];
    return entries.map((r) => ({
      seq: null,
      at: inspection.at,
      type: r.event,
      turnId: model.turnOfActor(r.machine, r.actorId),
      refused: true,
      reason: `${inspection.command} refused: ${r.reason}`,
      event: { type: r.event, command: inspection.command, commandId: inspection.commandId, outcome: inspection.outcome, ...r },
    }));
  }

  function schedule() {
    if (frame || stopped) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      render();
    });
  }

  function render() {
    const view = model.view;
    const turnIds = model.turnIds();
    if (followNewest || (selectedTurn && !view?.turns[selectedTurn])) selectedTurn = turnIds[0] ?? null;
    if (view) {
      title.textContent = view.title || '(untitled)';
      title.title = view.id;
      renderMeta();
      subagents.update(view);
    }
    renderTurnSelect(turnIds);
    renderChanges();
    renderCharts();
    renderActors(turnIds);
    renderThreadApprovals(turnIds);
    liveText.render(selectedTurn, selectedTurn ? model.turn(selectedTurn) : null, (partId, fromView) => model.state('part', partId, fromView) ?? fromView);
  }

  /** @param {NonNullable<typeof model.view>} view */
  function agentOf(view) {
    const last = view.openTurnId ?? view.turnIds.at(-1) ?? null;
    const ran = view.turnContext && view.turnContext.turnId === last ? view.turnContext.context.agent : null;
    return ran ?? (last ? view.turns[last]?.agent : null) ?? view.agent ?? 'build';
  }

  function renderMeta() {
    const view = /** @type {NonNullable<typeof model.view>} */ (model.view);
    const open = view.openTurnId;
    const waiting = work && !work.heldBy ? (work.liveWorkers ? 'offered to workers' : `waiting for a worker of ${work.environment}`) : null;
    meta.replaceChildren(...[
      h('span', { class: 'mono faint', title: view.id }, shortId(view.id)),
      h('span', {}, 'session ', h('b', {}, model.sessionState() ?? '?')),
      h('span', {}, `${view.turnIds.length} turn${view.turnIds.length === 1 ? '' : 's'}`),
      open ? h('span', {}, 'open ', h('b', { title: open }, shortId(open)), work?.heldBy ? ` on ${work.heldBy}` : '') : null,
      h('span', { 'data-testid': 'agent', title: 'The agent the open (or last) turn runs as' }, 'agent ', h('b', {}, agentOf(view))),
      view.queue?.length ? h('span', { 'data-testid': 'queued' }, `${view.queue.length} queued`) : null,
      waiting ? h('span', { class: 'warn' }, waiting) : null,
      h('span', { class: 'faint' }, `seq ${model.viewSeq}`),
    ].filter((node) => node !== null));
    interrupt.hidden = !open || !nav.may('operate');
    composer?.setRunning(open !== null);
  }

  /** The selected turn's changes, when its checkpoint has them. */
  function renderChanges() {
    const turn = selectedTurn ? model.turn(selectedTurn) : null;
    const diff = turn?.checkpoint?.diff;
    changes.hidden = !diff;
    if (!turn || !diff) return;
    changes.replaceChildren(turn.revertedAt ? 'Changes (reverted) ' : 'Changes ', diffStat(diff.additions, diff.deletions));
  }

  /** @param {string[]} turnIds */
  function renderTurnSelect(turnIds) {
    reconcile(turnSelect, turnIds, (id) => id, (id) => h('option', { value: id, title: id }), (option, id) => {
      const turn = model.turn(id);
      const input = turn?.messages[0]?.parts.map((p) => p.text).join(' ') ?? '';
      option.textContent = `${shortId(id)} · ${model.turnState(id) ?? '?'} · ${input.length > 40 ? `${input.slice(0, 39)}…` : input}`;
    });
    if (turnIds.length === 0) turnSelect.replaceChildren(h('option', { value: '' }, 'no turn yet'));
    if (selectedTurn) turnSelect.value = selectedTurn;
  }

  function renderCharts() {
    if (charts.size === 0) return;
    const session = model.sessionState();
    highlight('session', new Map(session ? [[session, 1]] : []), '', model.lastTransition('session', 'session'));

    const turnState = selectedTurn ? model.turnState(selectedTurn) : undefined;
    highlight('turn', new Map(turnState ? [[turnState, 1]] : []), selectedTurn ? `turn ${shortId(selectedTurn)}` : 'no turn',
      selectedTurn ? model.lastTransition('turn', selectedTurn) : null);

    const parts = selectedTurn ? model.partsOf(selectedTurn) : [];
    highlight('part', countStates(parts), `${parts.length} part${parts.length === 1 ? '' : 's'} of the turn`, model.latestAmong('part', parts));

    const approvals = selectedTurn ? model.approvalsOf(selectedTurn) : [];
    highlight('approval', countStates(approvals), `${approvals.length} approval${approvals.length === 1 ? '' : 's'} of the turn`, model.latestAmong('approval', approvals));
  }

  /** @param {Array<{ state: string }>} actors */
  function countStates(actors) {
    /** @type {Map<string, number>} */
    const counts = new Map();
    for (const actor of actors) counts.set(actor.state, (counts.get(actor.state) ?? 0) + 1);
    return counts;
  }

  /**
   * @param {string} machine
   * @param {Map<string, number>} counts
   * @param {string} subject
   * @param {(import('./threadModel.js').Fired & { actorId?: string }) | null} fired
   */
  function highlight(machine, counts, subject, fired) {
    const chart = charts.get(machine);
    if (!chart) return;
    setActive(chart.svg, counts);
    const found = setFired(chart.svg, fired);
    if (fitBox.checked) placeLabels(chart.svg, chart.layout, counts.keys());
    chart.subject.textContent = subject;
    if (fired) {
      const who = fired.actorId ? `${shortId(fired.actorId)} ` : '';
      const from = fired.from === null ? '(new)' : fired.from;
      chart.fired.textContent = `${who}${fired.event}: ${from} → ${fired.to} @${fired.threadSeq}`;
      chart.fired.title = found ? 'the last transition, highlighted in the chart' : 'the last transition (no edge: the actor came into being)';
    } else {
      chart.fired.textContent = '';
    }
    // Keep the active state in sight when the chart is wider than its column, without fighting the user's scrolling.
    const focus = [...counts.keys()].sort().join('|');
    if (focus && focus !== chart.focus) {
      chart.focus = focus;
      const first = [...counts.keys()].map((path) => chart.layout.states.find((s) => s.path === path)).find(Boolean);
      const scroller = chart.scroller;
      if (first && scroller.scrollWidth > scroller.clientWidth) {
        const scale = scroller.scrollWidth / chart.layout.width;
        const x = (first.x + first.width / 2) * scale;
        if (x < scroller.scrollLeft + 40 || x > scroller.scrollLeft + scroller.clientWidth - 40) scroller.scrollLeft = x - scroller.clientWidth / 2;
      }
    }
  }

  /** @param {string[]} turnIds */
  function renderActors(turnIds) {
    /** @type {Array<{ machine: string, id: string, state: string }>} */
    const rows = model.view ? [{ machine: 'session', id: 'session', state: model.sessionState() ?? '?' }] : [];
    for (const id of turnIds) {
      const state = model.turnState(id) ?? '?';
      if (id === selectedTurn || !finals.get('turn')?.has(state)) rows.push({ machine: 'turn', id, state });
    }
    if (selectedTurn) {
      for (const p of model.partsOf(selectedTurn)) rows.push({ machine: 'part', id: p.id, state: p.state });
      for (const a of model.approvalsOf(selectedTurn)) rows.push({ machine: 'approval', id: a.id, state: a.state });
    }
    reconcile(actorList, rows, (r) => `${r.machine}:${r.id}`, (r) => {
      const row = h('div', { class: 'actor', 'data-actor': `${r.machine}:${r.id}` });
      if (r.machine === 'turn') {
        row.classList.add('selectable');
        row.addEventListener('click', () => selectTurn(r.id, true));
      }
      return row;
    }, (row, r) => {
      row.dataset.state = r.state;
      row.classList.toggle('final', finals.get(r.machine)?.has(r.state) ?? false);
      row.classList.toggle('selected', r.machine === 'turn' && r.id === selectedTurn);
      row.title = `${r.machine}:${r.id} → ${r.state}`;
      row.replaceChildren(
        h('span', { class: 'machine' }, r.machine),
        h('span', { class: 'id' }, r.machine === 'session' ? '' : shortId(r.id)),
        h('span', { class: 'arrow' }, '→'),
        h('span', { class: 'to' }, r.state));
    });
  }

  /** @param {string[]} turnIds */
  function renderThreadApprovals(turnIds) {
    const own = turnIds.flatMap((turnId) =>
      model.approvalsOf(turnId)
        .filter((a) => a.state === 'pending' && a.approval)
        .map((a) => ({ ...(/** @type {NonNullable<typeof a.approval>} */ (a.approval)), threadId, turnId })));
    const pending = [...own, ...childApprovals];
    renderApprovals(approvalList, pending, { showThread: false, mayAnswer: nav.may('approve'), onAnswered: answered, link: nav.link });
    approvalsEmpty.hidden = pending.length > 0;
    approvalCount.textContent = pending.length ? String(pending.length) : '';
  }

  /** A sub-agent's approval answered changes nothing in this thread's log: its list is asked for again. */
  function answered() {
    scheduleRefetch();
    subagents.soon();
  }

  void refetch();
  openStream(0);

  return () => {
    stopped = true;
    subagents.stop();
    stream?.close();
    clearTimeout(refetchTimer);
    if (frame) cancelAnimationFrame(frame);
  };
}
