// @ts-check
/**
 * The selected turn as it streams: the user's input, the text as `live`
 * deltas bring it (they are ahead of the log) and as the view has it once a
 * part is closed, and its tool calls.
 */
import { h, reconcile } from './dom.js';
import { toolCallElement, updateToolCall } from './toolCall.js';

/**
 * @typedef {import('./stream.js').LiveDelta} LiveDelta
 * @typedef {import('./threadModel.js').TurnView} TurnView
 * @typedef {import('./threadModel.js').PartView} PartView
 * @typedef {{ key: string, kind: string, text: string, open: boolean, part: PartView | null, state: string }} Block
 *   `text`: for a tool call, the latest output it printed while running
 */

/** @param {string} state */
const isOpen = (state) => state === 'pending' || state.startsWith('running');

export class LiveText {
  /** @param {import('./overview.js').LinkMaker} link how a delegated call's card links to its sub-agent's thread */
  constructor(link) {
    this.link = link;
    /** partId → what the deltas said so far. @type {Map<string, { turnId: string, kind: string, text: string }>} */
    this.live = new Map();
    /** partId → the latest output of a running tool call (each delta replaces the one before). @type {Map<string, string>} */
    this.toolOutput = new Map();
    this.body = h('div', { class: 'live-text', 'data-testid': 'live-text' });
    this.caption = h('span', { class: 'count' });
    this.element = h('section', { class: 'panel live-panel' }, h('h2', {}, 'Turn', this.caption), this.body);
  }

  /** @param {LiveDelta} delta */
  add(delta) {
    if (delta.kind === 'toolOutput') this.toolOutput.set(delta.partId, delta.text);
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
    /** @type {Block[]} */
    const blocks = [];
    const input = turn?.messages[0]?.parts.map((p) => p.text).join('\n') ?? '';
    if (input) blocks.push({ key: 'user', kind: 'user', text: input, open: false, part: null, state: '' });
    const parts = turn?.messages[1]?.parts ?? [];
    let streaming = false;
    for (const part of parts) {
      const state = stateOf(part.id, part.state);
      const open = isOpen(state);
      if (part.kind === 'tool') {
        // Running, it shows what it printed last; once it ended, its result says it all.
        if (!open) this.toolOutput.delete(part.id);
        blocks.push({ key: part.id, kind: 'tool', text: this.toolOutput.get(part.id) ?? '', open, part, state });
        continue;
      }
      const live = this.live.get(part.id);
      // Closed: the view's text is the whole, committed one. Open: the deltas may be ahead of it.
      const text = !open || !live || live.text.length < part.text.length ? part.text : live.text;
      if (!open) this.live.delete(part.id);
      if (open) streaming = true;
      blocks.push({ key: part.id, kind: part.kind, text, open, part, state });
    }
    // Parts the view does not hold yet: only their deltas so far.
    const known = new Set(parts.map((p) => p.id));
    for (const [partId, entry] of this.live) {
      if (entry.turnId !== turnId || known.has(partId)) continue;
      streaming = true;
      blocks.push({ key: partId, kind: entry.kind, text: entry.text, open: true, part: null, state: 'running' });
    }
    if (blocks.length === 0) blocks.push({ key: 'empty', kind: 'empty', text: turnId ? 'No text in this turn yet.' : 'No turn yet.', open: false, part: null, state: '' });
    // Keyed, so a tool call the person opened or closed stays so while the turn goes on.
    reconcile(el, blocks, (b) => `${b.kind}:${b.key}`, (b) => (b.kind === 'tool' ? toolCallElement() : h('div')), (node, b) => {
      if (b.kind === 'tool' && b.part) return updateToolCall(/** @type {HTMLDetailsElement} */ (node), b.part, b.state, b.text, this.link);
      node.className = b.kind === 'empty' ? 'empty' : `part ${b.kind}${b.open ? ' streaming' : ''}`;
      node.replaceChildren(...(b.kind === 'empty' ? [b.text] : [h('span', { class: 'kind' }, b.kind), b.text]));
    });
    this.caption.textContent = streaming ? 'streaming' : '';
    if (follow) el.scrollTop = el.scrollHeight;
  }
}

