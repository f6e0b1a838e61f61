// @ts-check
/**
 * One tool call of a turn, readable: a line with the tool, what it was given
 * (a command line, a path) and how it ended; below it, collapsible, the input
 * and the output as text in monospace blocks. A command that exited non-zero
 * is a result like any other ("exited 1"), not a broken part. A call handed
 * to a sub-agent reads as a delegation (taskCall.js).
 */
import { h } from './dom.js';
import { taskHeadline, taskOutcome, taskRows } from './taskCall.js';

/**
 * @typedef {import('./threadModel.js').PartView} PartView
 * @typedef {import('./overview.js').LinkMaker} LinkMaker
 */

/** Past this, a call's details start collapsed. */
const LONG_LINES = 8;
const LONG_CHARS = 600;

/** The field that says best what a call does, in the order tools name it. */
const HEADLINE_FIELDS = ['command', 'path', 'pattern', 'query', 'url'];

/**
 * How a call stands, in words: running, waiting, done, or how it ended.
 * @param {string} state the part's state
 * @param {PartView['tool']} tool
 * @param {string | null} error
 * @returns {{ tone: 'running' | 'ok' | 'exited' | 'failed' | 'stopped', text: string }}
 */
export function toolOutcome(state, tool, error) {
  if (state.endsWith('awaitingApproval')) return { tone: 'running', text: 'waits for approval' };
  if (state === 'pending' || state.startsWith('running')) return { tone: 'running', text: 'running…' };
  if (state === 'completed') return { tone: 'ok', text: 'done' };
  if (state === 'interrupted') return { tone: 'stopped', text: tool?.outcome === 'notStarted' ? 'interrupted before it ran' : 'interrupted' };
  const said = tool?.output ?? error ?? '';
  const exit = /(?:^|\n)exit code (\d+)\s*$/.exec(said);
  if (exit) return { tone: 'exited', text: `exited ${exit[1]}` };
  return { tone: 'failed', text: `failed: ${firstLine(said) || 'no reason given'}` };
}

/** @param {string} text */
function firstLine(text) {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** The input as the model gave it: parsed once ready, else what has streamed so far. @param {PartView['tool']} tool */
function inputOf(tool) {
  if (tool?.input && typeof tool.input === 'object') return /** @type {Record<string, unknown>} */ (tool.input);
  try {
    const parsed = JSON.parse(tool?.inputText ?? '');
    return parsed && typeof parsed === 'object' ? /** @type {Record<string, unknown>} */ (parsed) : null;
  } catch {
    return null;
  }
}

/** @param {Record<string, unknown> | null} input @param {string} raw */
function headline(input, raw) {
  const field = input ? HEADLINE_FIELDS.find((name) => typeof input[name] === 'string') : undefined;
  const text = field && input ? String(input[field]) : raw;
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 140 ? `${line.slice(0, 139)}…` : line;
}

/** @param {unknown} value */
const asText = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2) ?? '');

/** @param {string} text */
const isLong = (text) => text.length > LONG_CHARS || text.split('\n').length > LONG_LINES;

/** A new, empty tool call; `updateToolCall` fills it. */
export function toolCallElement() {
  const details = h('details', { class: 'tool-call', 'data-testid': 'tool-call' },
    h('summary', {}, h('span', { class: 'tool-name' }), h('span', { class: 'tool-headline' }), h('span', { class: 'tool-outcome' })),
    h('div', { class: 'tool-body' }));
  // Once the person opened or closed it, it stays as they left it.
  details.querySelector('summary')?.addEventListener('click', () => {
    details.dataset.chosen = '1';
  });
  return details;
}

/**
 * The status a delegated call's body was built for: built again, it would
 * close the answer the person opened, and all it shows is fixed once the
 * status changes (`task.settled` brings answer, error and usage with it).
 * @type {WeakMap<Element, string>}
 */
const shownStatus = new WeakMap();

/**
 * @param {HTMLDetailsElement} el
 * @param {PartView} part
 * @param {string} state its current state
 * @param {string} printing while it runs, the latest of what it prints (live, never stored)
 * @param {LinkMaker} link how the page links to a sub-agent's thread
 */
export function updateToolCall(el, part, state, printing, link) {
  const tool = part.tool;
  const task = part.task ?? null;
  const input = inputOf(tool);
  const outcome = task ? taskOutcome(task) : toolOutcome(state, tool, part.error ?? null);
  const [name, line, ended] = /** @type {HTMLElement[]} */ ([...el.querySelectorAll('summary > span')]);
  /** @type {HTMLElement} */ (name).textContent = tool?.name ?? '?';
  /** @type {HTMLElement} */ (line).textContent = task ? taskHeadline(task) : headline(input, tool?.inputText ?? '');
  /** @type {HTMLElement} */ (ended).textContent = outcome.text;
  el.dataset.outcome = outcome.tone;
  el.dataset.state = state;
  el.title = `part ${part.id} → ${state}`;
  const body = /** @type {HTMLElement} */ (el.querySelector('.tool-body'));

  if (task) {
    if (shownStatus.get(el) !== task.status) {
      body.replaceChildren(...taskRows(task, link));
      shownStatus.set(el, task.status);
    }
    // Open while the sub-agent works, so its thread is a click away; settled, the answer folds by itself and a long prompt closes the card.
    if (outcome.tone === 'running' && !el.dataset.chosen) el.open = true;
    sizeOnce(el, outcome.tone !== 'running', [task.prompt]);
    return;
  }

  const fields = input ? Object.entries(input) : tool?.inputText ? [['input', tool.inputText]] : [];
  const output = tool?.output ?? (state === 'error' ? part.error ?? null : null);
  const rows = fields.map(([key, value]) => {
    const text = asText(value);
    return text.includes('\n') || text.length > 80
      ? h('div', { class: 'tool-field' }, h('div', { class: 'tool-key' }, key), h('pre', { class: 'tool-text' }, text))
      : h('div', { class: 'tool-field inline' }, h('span', { class: 'tool-key' }, key), h('code', {}, text));
  });
  if (output !== null) rows.push(h('div', { class: 'tool-field' }, h('div', { class: 'tool-key' }, 'output'), h('pre', { class: 'tool-text output', 'data-testid': 'tool-output' }, output)));
  else if (printing) rows.push(h('div', { class: 'tool-field' }, h('div', { class: 'tool-key' }, 'output so far (its last lines)'), h('pre', { class: 'tool-text output', 'data-testid': 'tool-printing' }, printing)));
  body.replaceChildren(...rows);
  const settled = outcome.tone !== 'running';
  // A call that prints as it runs shows it.
  if (!settled && printing && !el.dataset.chosen) el.open = true;
  sizeOnce(el, settled, [output ?? '', ...fields.map(([, value]) => asText(value))]);
}

/**
 * Once a call ended, short calls stay open and long ones close to a line,
 * unless the person chose.
 * @param {HTMLDetailsElement} el @param {boolean} settled @param {string[]} texts
 */
function sizeOnce(el, settled, texts) {
  if (!settled || el.dataset.chosen || el.dataset.sized) return;
  el.dataset.sized = '1';
  el.open = !texts.some(isLong);
}
