// @ts-check
/**
 * The thread page's input box: starts a turn (`turn.start`) on an idle
 * thread; while a turn runs, steers the text into it or queues it as the
 * next turn (`whileRunning`), as docs/protocol.md describes. Enter sends
 * (steering while a turn runs, like `turnloom run`), Shift+Enter is a new line.
 */
import { call, describeError } from './api.js';
import { h, shortId } from './dom.js';

/** @typedef {'start' | 'steer' | 'queue'} Send */

/**
 * @param {string} threadId
 * @param {{ onSent: () => void }} options
 */
export function createComposer(threadId, options) {
  const input = h('textarea', {
    'data-testid': 'composer-input',
    rows: 3,
    placeholder: 'Ask the agent… (Enter sends, Shift+Enter for a new line)',
    spellcheck: 'true',
  });
  const start = h('button', { 'data-testid': 'composer-start', class: 'primary', type: 'button', title: 'Start a turn with this input (turn.start)' }, 'Start turn');
  const steer = h('button', { 'data-testid': 'composer-steer', class: 'primary', type: 'button', title: 'Hand it to the running turn, which reads it at its next step' }, 'Steer');
  const queue = h('button', { 'data-testid': 'composer-queue', type: 'button', title: 'Run it as the next turn, once the running one has settled' }, 'Queue');
  const result = h('span', { class: 'composer-result', 'data-testid': 'composer-result' });
  const element = h('section', { class: 'panel composer', 'data-testid': 'composer' },
    input, h('div', { class: 'composer-actions' }, result, h('span', { class: 'spacer' }), start, steer, queue));
  let running = false;
  let sending = false;

  function sync() {
    start.hidden = running;
    steer.hidden = !running;
    queue.hidden = !running;
    for (const button of [start, steer, queue]) button.disabled = sending;
  }

  /** @param {Send} how */
  async function send(how) {
    const text = input.value;
    if (sending || text.trim() === '') return;
    sending = true;
    sync();
    result.className = 'composer-result';
    result.textContent = 'sending…';
    try {
      const answer = await call('turn.start', { threadId, input: { text }, ...(how === 'start' ? {} : { whileRunning: how }) });
      input.value = '';
      result.textContent = outcome(answer);
      options.onSent();
    } catch (error) {
      result.className = 'composer-result bad';
      result.textContent = describeError(error);
    } finally {
      sending = false;
      sync();
    }
  }

  start.addEventListener('click', () => void send('start'));
  steer.addEventListener('click', () => void send('steer'));
  queue.addEventListener('click', () => void send('queue'));
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    void send(running ? 'steer' : 'start');
  });
  sync();

  return {
    element,
    /** Whether a turn is open: steer and queue then, start otherwise. @param {boolean} open */
    setRunning(open) {
      if (open === running) return;
      running = open;
      sync();
    },
  };
}

/** What became of the input, as the API's answer says. @param {any} answer */
function outcome(answer) {
  if (answer.inbox === 'steered') return `steered into turn ${shortId(answer.turnId)}`;
  if (answer.inbox === 'queued') return `queued as turn ${shortId(answer.turnId)}${answer.interrupted ? `, after ${shortId(answer.interrupted)} stops` : ''}`;
  return `started turn ${shortId(answer.turnId)}`;
}
