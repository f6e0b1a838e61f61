// @ts-check
/** The four lifecycle charts as SVG, from the layouts of `/charts.json`, and their live highlights. */
import { s } from './dom.js';

/**
 * @typedef {{ path: string, name: string, parent: string | null, compound: boolean, final: boolean, initial: boolean,
 *   description: string, x: number, y: number, width: number, height: number }} ChartState
 * @typedef {{ id: string, from: string, to: string, event: string, points: Array<{ x: number, y: number }>,
 *   labelX: number, labelY: number }} ChartEdge
 * @typedef {{ machine: 'session' | 'turn' | 'part' | 'approval', description: string, width: number, height: number,
 *   states: ChartState[], edges: ChartEdge[] }} ChartLayout
 */

const LABEL_CHAR = 6.6;
const LABEL_HEIGHT = 16;
/** A compound state's name, drawn at 11.5px bold. */
const TITLE_CHAR = 7.4;
/** A fitted chart in a column narrower than itself shrinks this far at most, then scrolls: its text stays at 9 px or more. */
const MIN_FIT_SCALE = 0.8;

/** @param {string} event */
const labelWidth = (event) => event.length * LABEL_CHAR + 8;

/**
 * Draws one machine. Compound states first (they are containers), then the
 * edges, then the leaves and the labels, so nothing hides a label. A fitted
 * layout (see `ChartShape` in inspector/chartLayout.ts) made no room for its
 * labels: they stay hidden but for those `placeLabels` shows, and the one of
 * the edge under the pointer.
 * @param {ChartLayout} layout
 * @param {boolean} [fitted]
 * @returns {SVGSVGElement}
 */
export function renderChart(layout, fitted = false) {
  const arrow = `arrow-${layout.machine}`;
  const arrowFired = `arrow-fired-${layout.machine}`;
  const marker = (/** @type {string} */ id, /** @type {string} */ cls) =>
    s('marker', { id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse', class: cls },
      s('path', { d: 'M0,0 L10,5 L0,10 z' }));
  const svg = /** @type {SVGSVGElement} */ (s('svg', {
    'data-testid': `chart-${layout.machine}`,
    class: 'chart',
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    width: layout.width,
    height: layout.height,
    role: 'img',
    'aria-label': `${layout.machine} lifecycle: ${layout.description}`,
    style: fitted ? `min-width:${Math.round(layout.width * MIN_FIT_SCALE)}px` : undefined,
  }, s('defs', {}, marker(arrow, 'arrowhead'), marker(arrowFired, 'arrowhead fired'))));

  const compounds = layout.states.filter((st) => st.compound);
  const leaves = layout.states.filter((st) => !st.compound);
  for (const st of compounds) svg.append(stateGroup(st));

  const labels = s('g', { class: 'labels' });
  for (const edge of layout.edges) {
    const points = edge.points.map((p) => `${p.x},${p.y}`).join(' ');
    const width = labelWidth(edge.event);
    const group = s('g', { class: 'edge', 'data-from': edge.from, 'data-to': edge.to, 'data-event': edge.event, 'data-id': edge.id },
      s('title', {}, `${edge.from} → ${edge.to} on ${edge.event}`),
      s('polyline', { points, 'marker-end': `url(#${arrow})`, 'data-marker': arrow, 'data-marker-fired': arrowFired }),
      // A thin line is hard to point at: a wide invisible twin takes the pointer.
      fitted ? s('polyline', { class: 'hit', points }) : null);
    svg.append(group);
    // Labels go on top of every line; each stays tied to its edge for the highlight.
    const label = s('g', { class: 'edge-label', 'data-id': edge.id },
      s('rect', { x: edge.labelX - width / 2, y: edge.labelY - LABEL_HEIGHT / 2, width, height: LABEL_HEIGHT, rx: 3 }),
      s('text', { x: edge.labelX, y: edge.labelY, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, edge.event));
    labels.append(label);
    if (fitted) {
      group.addEventListener('mouseenter', () => label.classList.add('hover'));
      group.addEventListener('mouseleave', () => label.classList.remove('hover'));
    }
  }
  for (const st of leaves) svg.append(stateGroup(st));
  svg.append(labels);
  if (fitted) svg.classList.add('fitted');
  return svg;
}

/**
 * In a fitted chart, shows the labels of what can happen next (the edges
 * leaving the active states, or a compound holding one) and of the edge that
 * fired, each moved along or beside its line until it covers neither a state
 * nor another shown label.
 * @param {SVGSVGElement} svg
 * @param {ChartLayout} layout
 * @param {Iterable<string>} activePaths
 */
export function placeLabels(svg, layout, activePaths) {
  const active = [...activePaths];
  const fired = svg.querySelector('g.edge.fired')?.getAttribute('data-id') ?? null;
  const leaving = (/** @type {ChartEdge} */ edge) => active.some((path) => path === edge.from || path.startsWith(`${edge.from}.`));
  const shown = layout.edges.filter((edge) => edge.id === fired || leaving(edge)).sort((a, b) => Number(b.id === fired) - Number(a.id === fired));
  // What a label must not cover: the leaf states, and the names drawn at the top left of compound ones.
  /** @type {Array<{ x: number, y: number, width: number, height: number }>} */
  const taken = layout.states.map((st) => (st.compound ? { x: st.x, y: st.y, width: st.name.length * TITLE_CHAR + 24, height: 20 } : st));
  for (const g of svg.querySelectorAll('g.edge-label')) {
    g.classList.remove('shown');
    g.removeAttribute('transform');
  }
  for (const edge of shown) {
    const g = svg.querySelector(`g.edge-label[data-id="${CSS.escape(edge.id)}"]`);
    if (!g) continue;
    const width = labelWidth(edge.event);
    const box = (/** @type {{ dx: number, dy: number }} */ { dx, dy }) => ({ x: edge.labelX - width / 2 + dx, y: edge.labelY - LABEL_HEIGHT / 2 + dy, width, height: LABEL_HEIGHT });
    const free = (/** @type {{ x: number, y: number, width: number, height: number }} */ b) =>
      b.x >= 0 && b.y >= 0 && b.x + b.width <= layout.width && b.y + b.height <= layout.height && !taken.some((t) => overlaps(b, t));
    const offset = labelOffsets(width).find((candidate) => free(box(candidate))) ?? { dx: 0, dy: 0 };
    taken.push(box(offset));
    g.classList.add('shown');
    if (offset.dx || offset.dy) g.setAttribute('transform', `translate(${offset.dx} ${offset.dy})`);
  }
}

/** Where a label may go, nearest first: along a (mostly vertical) line, then beside it. @param {number} width */
function labelOffsets(width) {
  const side = width / 2 + 6;
  const steps = [0, LABEL_HEIGHT + 2, -(LABEL_HEIGHT + 2), 2 * (LABEL_HEIGHT + 2), -2 * (LABEL_HEIGHT + 2), 3 * (LABEL_HEIGHT + 2), -3 * (LABEL_HEIGHT + 2)];
  return [...steps.map((dy) => ({ dx: 0, dy })), ...steps.flatMap((dy) => [{ dx: side, dy }, { dx: -side, dy }])];
}

/** @param {{ x: number, y: number, width: number, height: number }} a @param {{ x: number, y: number, width: number, height: number }} b */
function overlaps(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

/** @param {ChartState} st */
function stateGroup(st) {
  const cls = ['state', st.compound && 'compound', st.final && 'final', st.initial && 'initial'].filter(Boolean).join(' ');
  const g = s('g', { class: cls, 'data-path': st.path }, s('title', {}, `${st.path}${st.description ? ` — ${st.description}` : ''}`));
  g.append(s('rect', { class: 'box', x: st.x, y: st.y, width: st.width, height: st.height, rx: st.compound ? 8 : 6 }));
  if (st.final) g.append(s('rect', { class: 'inner', x: st.x + 3, y: st.y + 3, width: st.width - 6, height: st.height - 6, rx: 4 }));
  if (st.compound) {
    const titleX = st.x + (st.initial ? 22 : 9);
    g.append(s('text', { class: 'name', x: titleX, y: st.y + 13, 'dominant-baseline': 'central' }, st.name));
    if (st.initial) g.append(...initialMark(st.x + 8, st.y + 13, st.x + 18));
  } else {
    g.append(s('text', { class: 'name', x: st.x + st.width / 2, y: st.y + st.height / 2, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, st.name));
    if (st.initial) g.append(...initialMark(st.x - 15, st.y + st.height / 2, st.x - 1));
  }
  g.append(s('g', { class: 'badge' }));
  return g;
}

/** The start dot and its short arrow into the initial state. @param {number} cx @param {number} cy @param {number} toX */
function initialMark(cx, cy, toX) {
  return [
    s('circle', { class: 'initial-dot', cx, cy, r: 3.5 }),
    s('path', { class: 'initial-arrow', d: `M${cx + 3.5},${cy} L${toX - 3},${cy} M${toX - 6},${cy - 3} L${toX},${cy} L${toX - 6},${cy + 3}` }),
  ];
}

/**
 * Marks the states the live actors are in: `active` on the exact state, `within`
 * on its ancestors, and a count badge when several actors share one state.
 * @param {SVGSVGElement} svg
 * @param {Map<string, number>} counts path → how many actors are in it
 */
export function setActive(svg, counts) {
  for (const g of svg.querySelectorAll('g.state')) {
    const path = g.getAttribute('data-path') ?? '';
    const count = counts.get(path) ?? 0;
    const within = [...counts.keys()].some((p) => p.startsWith(`${path}.`));
    g.classList.toggle('active', count > 0);
    g.classList.toggle('within', within && count === 0);
    const badge = /** @type {SVGGElement} */ (g.querySelector(':scope > g.badge'));
    badge.replaceChildren();
    if (count > 1) {
      const box = /** @type {SVGRectElement} */ (g.querySelector(':scope > rect.box'));
      const x = Number(box.getAttribute('x')) + Number(box.getAttribute('width'));
      const y = Number(box.getAttribute('y'));
      badge.append(s('circle', { cx: x - 2, cy: y + 2, r: 8 }), s('text', { x: x - 2, y: y + 2, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, String(count)));
    }
  }
}

/**
 * Highlights the edge of a transition (`fired`), or none. An event the chart
 * has no edge for (`(created)`) clears the highlight.
 * @param {SVGSVGElement} svg
 * @param {{ from: string | null, to: string, event: string } | null} transition
 * @returns {boolean} whether an edge was found
 */
export function setFired(svg, transition) {
  /** @type {Element | null} */
  let best = null;
  if (transition && transition.from !== null) {
    for (const g of svg.querySelectorAll('g.edge')) {
      const from = g.getAttribute('data-from') ?? '';
      if (g.getAttribute('data-event') !== transition.event || g.getAttribute('data-to') !== transition.to) continue;
      if (!firedFrom(from, transition.from)) continue;
      // XState takes the innermost state's transition: so does the highlight.
      if (!best || from.length > (best.getAttribute('data-from') ?? '').length) best = g;
    }
  }
  for (const g of svg.querySelectorAll('g.edge')) {
    const on = g === best;
    g.classList.toggle('fired', on);
    const line = g.querySelector('polyline');
    line?.setAttribute('marker-end', `url(#${line.getAttribute(on ? 'data-marker-fired' : 'data-marker')})`);
    svg.querySelector(`g.edge-label[data-id="${CSS.escape(g.getAttribute('data-id') ?? '')}"]`)?.classList.toggle('fired', on);
  }
  return best !== null;
}

/** An edge declared on a compound fires from any state inside it. @param {string} edgeFrom @param {string} from */
function firedFrom(edgeFrom, from) {
  return from === edgeFrom || from.startsWith(`${edgeFrom}.`);
}
