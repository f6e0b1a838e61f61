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

/**
 * Draws one machine. Compound states first (they are containers), then the
 * edges, then the leaves and the labels, so nothing hides a label.
 * @param {ChartLayout} layout
 * @returns {SVGSVGElement}
 */
export function renderChart(layout) {
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
  }, s('defs', {}, marker(arrow, 'arrowhead'), marker(arrowFired, 'arrowhead fired'))));

  const compounds = layout.states.filter((st) => st.compound);
  const leaves = layout.states.filter((st) => !st.compound);
  for (const st of compounds) svg.append(stateGroup(st));

  const labels = s('g', { class: 'labels' });
  for (const edge of layout.edges) {
    const points = edge.points.map((p) => `${p.x},${p.y}`).join(' ');
    const width = edge.event.length * LABEL_CHAR + 8;
    const group = s('g', { class: 'edge', 'data-from': edge.from, 'data-to': edge.to, 'data-event': edge.event, 'data-id': edge.id },
      s('title', {}, `${edge.from} → ${edge.to} on ${edge.event}`),
      s('polyline', { points, 'marker-end': `url(#${arrow})`, 'data-marker': arrow, 'data-marker-fired': arrowFired }));
    svg.append(group);
    // Labels go on top of every line; each stays tied to its edge for the highlight.
    labels.append(s('g', { class: 'edge-label', 'data-id': edge.id },
      s('rect', { x: edge.labelX - width / 2, y: edge.labelY - 8, width, height: 16, rx: 3 }),
      s('text', { x: edge.labelX, y: edge.labelY, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, edge.event)));
  }
  for (const st of leaves) svg.append(stateGroup(st));
  svg.append(labels);
  return svg;
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
