// @ts-check
/**
 * A `task` call reads as a delegation, not as a tool's input and output:
 * which agent, what it was asked, the thread it works in, and once settled
 * how it ended and what it answered. The sub-agents tree names its calls
 * with the same words.
 */
import { h, shortId } from './dom.js';

/**
 * @typedef {import('./threadModel.js').TaskView} TaskView
 * @typedef {import('./overview.js').LinkMaker} LinkMaker
 */

/** Past this, an answer starts collapsed. */
const LONG_ANSWER_LINES = 12;
const LONG_ANSWER_CHARS = 900;

/** @param {string} text @param {number} max */
function oneLine(text, max) {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** What the call asks for, in a line: its description, else the start of its prompt. @param {TaskView} task */
export const taskLabel = (task) => oneLine(task.description || task.prompt, 120);

/** A refused call never had a thread: its id was derived, but nothing was made. @param {TaskView} task */
export const hasThread = (task) => task.status !== 'refused';

/**
 * How the call stands, in the tones of the tool cards.
 * @param {TaskView} task
 * @returns {{ tone: 'running' | 'ok' | 'failed' | 'stopped' | 'refused', text: string }}
 */
export function taskOutcome(task) {
  if (task.status === 'running') return { tone: 'running', text: 'sub-agent running…' };
  if (task.status === 'completed') return { tone: 'ok', text: 'completed' };
  if (task.status === 'interrupted') return { tone: 'stopped', text: 'interrupted' };
  if (task.status === 'refused') return { tone: 'refused', text: 'refused' };
  return { tone: 'failed', text: `failed: ${oneLine(task.error ?? '', 100) || 'no reason given'}` };
}

/** The summary line's middle: the agent and what it was asked. @param {TaskView} task */
export const taskHeadline = (task) => `${task.agent}: ${taskLabel(task)}`;

/** @param {string} key @param {...import('./dom.js').Child} value */
const inline = (key, ...value) => h('div', { class: 'tool-field inline' }, h('span', { class: 'tool-key' }, key), ...value);

/**
 * The card's body: the agent and the most it may do, the description, the
 * prompt, the child's thread, and once settled its reason or its answer.
 * @param {TaskView} task @param {LinkMaker} link
 */
export function taskRows(task, link) {
  const usage = task.usage ? `${task.usage.input} in · ${task.usage.output} out` : null;
  return [
    inline('agent', h('code', {}, task.agent)),
    inline('mode', h('code', { title: 'The most the sub-agent may do: never wider than this thread' }, task.mode)),
    task.description ? inline('description', task.description) : null,
    h('div', { class: 'tool-field' }, h('div', { class: 'tool-key' }, 'prompt'), h('pre', { class: 'tool-text', 'data-testid': 'task-prompt' }, task.prompt)),
    inline('thread', hasThread(task)
      ? link(`/threads/${task.childThreadId}`, `open sub-agent thread ${shortId(task.childThreadId)}`, { title: task.childThreadId, 'data-testid': 'task-thread' })
      : h('span', { class: 'faint' }, 'none: the call was refused before a thread was made')),
    task.error ? inline(task.status === 'refused' ? 'why' : 'error', h('span', { class: 'task-error' }, task.error)) : null,
    usage ? inline('usage', h('span', { class: 'faint' }, usage)) : null,
    task.answer === null ? null : answer(task.answer),
  ].filter((row) => row !== null);
}

/** Collapsible, open at first when short. @param {string} text */
function answer(text) {
  const long = text.length > LONG_ANSWER_CHARS || text.split('\n').length > LONG_ANSWER_LINES;
  return h('details', { class: 'tool-field task-answer', 'data-testid': 'task-answer', open: !long },
    h('summary', { class: 'tool-key' }, `answer (${text.split('\n').length} line${text.includes('\n') ? 's' : ''})`),
    h('pre', { class: 'tool-text output' }, text));
}
