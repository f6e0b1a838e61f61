// @ts-check
/**
 * The text of the selected turn as it streams: `live` deltas appended per
 * part (they are ahead of the log), and the view's text once a part is closed.
 */
import { h } from './dom.js';

/**
 * @typedef {import('./stream.js').LiveDelta} LiveDelta
 * @typedef {import('./threadModel.js').TurnView} TurnView
 * @typedef {import('./threadModel.js').PartView} PartView
 */

/** @param {string} state */
const isOpen = (state) => state === 'pending' || state.startsWith('running');

export class LiveText {
  constructor() {
    /** partId → what the deltas said so far. @type {Map<string, { turnId: string, kind: string, text: string }>} */
    this.live = new Map();
    this.body = h('div', { class: 'live-text', 'data-testid': 'live-text' });
    this.caption = h('span', { class: 'count' });
    this.element = h('section', { class: 'panel live-panel' }, h('h2', {}, 'Text', this.caption), this.body);
  }

  /** @param {LiveDelta} delta */
  add(delta) {
    if (delta.kind !== 'text' && delta.kind !== 'reasoning') return;
    const entry = this.live.get(delta.partId) ?? { turnId: delta.turnId, kind: delta.kind, text: '' };
    entry.text += delta.text;
    this.live.set(delta.partId, entry);
  }

  /**
   * @param {string | null} turnId
   * @param {TurnView | null} turn
   * @param {(partId: string, fromView: string) => string} stateOf the part's current state
   */
  render(turnId, turn, stateOf) {
    const el = this.body;
    const follow = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
    /** @type {HTMLElement[]} */
    const blocks = [];
    const input = turn?.messages[0]?.parts.map((p) => p.text).join('\n') ?? '';
    if (input) blocks.push(h('div', { class: 'part user' }, h('span', { class: 'kind' }, 'user'), input));
    const parts = turn?.messages[1]?.parts ?? [];
    let streaming = false;
    for (const part of parts) {
      const state = stateOf(part.id, part.state);
      const open = isOpen(state);
      if (part.kind === 'tool') {
        const tool = part.tool;
        blocks.push(h('div', { class: 'part tool' }, h('span', { class: 'kind' }, 'tool'),
          `${tool?.name ?? '?'} ${clip(tool?.inputText ?? '', 120)}`, h('span', { class: 'faint' }, `  → ${state}`)));
        continue;
      }
      const live = this.live.get(part.id);
      // Closed: the view's text is the whole, committed one. Open: the deltas may be ahead of it.
      const text = !open || !live || live.text.length < part.text.length ? part.text : live.text;
      if (!open) this.live.delete(part.id);
      if (open) streaming = true;
      blocks.push(h('div', { class: `part ${part.kind}${open ? ' streaming' : ''}` }, h('span', { class: 'kind' }, part.kind), text));
    }
    // Parts the view does not hold yet: only their deltas so far.
    const known = new Set(parts.map((p) => p.id));
    for (const [partId, entry] of this.live) {
      if (entry.turnId !== turnId || known.has(partId)) continue;
      streaming = true;
      blocks.push(h('div', { class: `part ${entry.kind} streaming` }, h('span', { class: 'kind' }, entry.kind), entry.text));
    }
    if (blocks.length === 0) blocks.push(h('div', { class: 'empty' }, turnId ? 'No text in this turn yet.' : 'No turn yet.'));
    el.replaceChildren(...blocks);
    this.caption.textContent = streaming ? 'streaming' : '';
    if (follow) el.scrollTop = el.scrollHeight;
  }
}

/** @param {string} text @param {number} max */
function clip(text, max) {
  const line = text.replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
