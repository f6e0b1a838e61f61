// @ts-check
/**
 * The thread's events as a virtualised list: rows of a fixed height, a
 * spacer as tall as all of them, and only the rows in view (plus a margin)
 * in the document, so a thread of 10,000 events scrolls as lightly as one of 10.
 */
import { formatTime, h, shortId } from './dom.js';
import { summarize } from './summary.js';

const ROW_HEIGHT = 20;
const OVERSCAN = 12;

/**
 * A stored event, or a refusal that wrote nothing (no seq).
 * @typedef {{ seq: number | null, at: number, type: string, turnId: string | null, refused: boolean,
 *   reason: string | null, event: { type: string, [key: string]: any } | null, summary?: string }} TimelineRow
 */

export class Timeline {
  /** @param {{ onSelectTurn?: (turnId: string) => void }} [options] */
  constructor(options = {}) {
    /** @type {TimelineRow[]} */
    this.rows = [];
    /** Indexes into `rows` of those the filter lets through. @type {number[]} */
    this.shown = [];
    this.matchingEvents = 0;
    this.matchingRefused = 0;
    this.filter = { turn: '', kind: '' };
    /** Turn ids in the order they first appear. @type {string[]} */
    this.turnIds = [];
    /** @type {Set<string>} */
    this.types = new Set();
    this.options = options;
    this.frame = 0;
    this.stickToBottom = true;

    this.spacer = h('div', { class: 'spacer' });
    this.scroller = h('div', { class: 'timeline', 'data-testid': 'timeline', tabindex: '0' }, this.spacer);
    this.lastTop = 0;
    // Only scrolling up lets go of the bottom: the scroll event of our own jump
    // to the bottom may arrive after the panel was resized by the text above it.
    this.scroller.addEventListener('scroll', () => {
      const top = this.scroller.scrollTop;
      if (this.atBottom()) this.stickToBottom = true;
      else if (top < this.lastTop) this.stickToBottom = false;
      this.lastTop = top;
      this.schedule();
    });
    this.count = h('span', { 'data-testid': 'timeline-count' }, '0');
    this.refusedCount = h('span', { class: 'refused-count' });
    this.turnSelect = h('select', { 'data-testid': 'filter-turn', title: 'Only the events of one turn' }, h('option', { value: '' }, 'all turns'));
    this.turnSelect.addEventListener('change', () => this.setFilter({ turn: this.turnSelect.value }));
    this.kindList = h('datalist', { id: 'timeline-kinds' });
    this.kindInput = h('input', {
      'data-testid': 'filter-kind',
      type: 'search',
      placeholder: 'event type…',
      list: 'timeline-kinds',
      title: 'Only events whose type contains this text',
      spellcheck: 'false',
    });
    this.kindInput.addEventListener('input', () => this.setFilter({ kind: this.kindInput.value }));
    this.element = h('section', { class: 'panel timeline-panel' },
      h('h2', {}, 'Timeline', h('span', { class: 'count' }, this.count, ' events', this.refusedCount),
        h('span', { class: 'spacer' }),
        h('span', { class: 'filters' }, this.turnSelect, this.kindInput, this.kindList)),
      h('div', { class: 'timeline-head' },
        h('span', { class: 'seq' }, 'seq'), h('span', { class: 'time' }, 'time'), h('span', { class: 'type' }, 'type'),
        h('span', { class: 'turn' }, 'turn'), h('span', { class: 'summary' }, 'summary')),
      this.scroller);
  }

  atBottom() {
    const el = this.scroller;
    return el.scrollTop + el.clientHeight >= el.scrollHeight - ROW_HEIGHT / 2;
  }

  /** Adds rows at the end (events in seq order, refusals as they arrive). @param {TimelineRow[]} rows */
  append(rows) {
    if (rows.length === 0) return;
    for (const row of rows) {
      const index = this.rows.push(row) - 1;
      this.note(row);
      if (this.matches(row)) this.take(index);
    }
    this.schedule();
  }

  /** @param {{ turn?: string, kind?: string }} change */
  setFilter(change) {
    this.filter = { ...this.filter, ...change };
    this.refilter();
    // A new filter shows its newest matches first, as a log does.
    this.stickToBottom = true;
  }

  refilter() {
    this.shown = [];
    this.matchingEvents = 0;
    this.matchingRefused = 0;
    this.rows.forEach((row, index) => {
      if (this.matches(row)) this.take(index);
    });
    this.schedule();
  }

  /** @param {number} index */
  take(index) {
    this.shown.push(index);
    if (this.rows[index]?.seq === null) this.matchingRefused += 1;
    else this.matchingEvents += 1;
  }

  /** @param {TimelineRow} row */
  matches(row) {
    const { turn, kind } = this.filter;
    if (turn === '-' && row.turnId !== null) return false;
    if (turn && turn !== '-' && row.turnId !== turn) return false;
    if (kind && !row.type.toLowerCase().includes(kind.trim().toLowerCase())) return false;
    return true;
  }

  /** Keeps the filter choices to what the thread holds. @param {TimelineRow} row */
  note(row) {
    if (row.turnId && !this.turnIds.includes(row.turnId)) {
      this.turnIds.push(row.turnId);
      if (this.turnIds.length === 1) this.turnSelect.append(h('option', { value: '-' }, 'thread only (no turn)'));
      this.turnSelect.append(h('option', { value: row.turnId, title: row.turnId }, `turn ${shortId(row.turnId)}`));
    }
    if (!this.types.has(row.type)) {
      this.types.add(row.type);
      this.kindList.append(h('option', { value: row.type }));
    }
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const follow = this.stickToBottom;
    this.count.textContent = String(this.matchingEvents);
    this.refusedCount.textContent = this.matchingRefused ? ` · ${this.matchingRefused} refused` : '';
    this.spacer.style.height = `${this.shown.length * ROW_HEIGHT}px`;
    if (follow) this.scroller.scrollTop = this.scroller.scrollHeight;
    const top = this.scroller.scrollTop;
    this.lastTop = top;
    const height = this.scroller.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.shown.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const rows = [];
    for (let i = first; i < last; i += 1) rows.push(this.renderRow(this.rows[/** @type {number} */ (this.shown[i])], i));
    this.spacer.replaceChildren(...rows);
    this.stickToBottom = follow || this.atBottom();
  }

  /** @param {TimelineRow | undefined} row @param {number} position */
  renderRow(row, position) {
    if (!row) return h('div');
    row.summary ??= row.refused && row.reason ? row.reason : row.event ? summarize(row.event) : '';
    const detail = row.event ? JSON.stringify(row.event, null, 1) : '';
    const el = h('div', {
      class: 'timeline-row',
      'data-testid': 'timeline-row',
      'data-seq': row.seq ?? undefined,
      'data-type': row.type,
      'data-refused': row.refused ? 'true' : undefined,
      style: `top:${position * ROW_HEIGHT}px`,
      title: detail.length > 4000 ? `${detail.slice(0, 4000)}…` : detail || row.summary,
    },
      h('span', { class: 'seq' }, row.seq ?? '—'),
      h('span', { class: 'time' }, formatTime(row.at)),
      h('span', { class: 'type' }, row.refused ? `✕ ${row.type}` : row.type),
      h('span', { class: 'turn', title: row.turnId ?? '' }, shortId(row.turnId)),
      h('span', { class: 'summary' }, row.summary));
    if (row.turnId && this.options.onSelectTurn) {
      const turnId = row.turnId;
      el.addEventListener('dblclick', () => this.options.onSelectTurn?.(turnId));
    }
    return el;
  }
}
