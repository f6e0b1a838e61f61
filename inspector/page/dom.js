// @ts-check
/** Small DOM helpers: the page builds its elements with these instead of a framework. */

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * @typedef {string | number | boolean | null | undefined | ((event: Event) => void)} AttrValue
 * @typedef {Node | string | number | null | undefined | false} Child
 */

/**
 * @param {Element} el
 * @param {Record<string, AttrValue>} attrs
 */
function applyAttrs(el, attrs) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(key.replace(/^on/, ''), /** @type {EventListener} */ (value));
    else el.setAttribute(key, value === true ? '' : String(value));
  }
}

/** @param {Element} el @param {Child[]} children */
function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'object' ? child : String(child));
  }
}

/**
 * An HTML element: `h('a', { href, class: 'x', onclick }, 'text')`.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, AttrValue>} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

/**
 * An SVG element.
 * @param {string} tag
 * @param {Record<string, AttrValue>} [attrs]
 * @param {...Child} children
 * @returns {SVGElement}
 */
export function s(tag, attrs = {}, ...children) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

/**
 * Ids are shown shortened, the full id stays in a title: the random head is
 * cut to its end, the derived tail (`-s1-3-approval`) is kept.
 * @param {string | null | undefined} id
 */
export function shortId(id) {
  if (!id) return '';
  const dash = id.indexOf('-');
  const head = dash < 0 ? id : id.slice(0, dash);
  const tail = dash < 0 ? '' : id.slice(dash);
  const short = (head.length > 10 ? `…${head.slice(-6)}` : head) + tail;
  return short.length > 26 ? `…${short.slice(-25)}` : short;
}

/** @param {number} at epoch ms */
export function formatTime(at) {
  const d = new Date(at);
  const pad = (/** @type {number} */ n, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** @param {number} at epoch ms */
export function formatAgo(at) {
  const seconds = Math.max(0, Math.round((Date.now() - at) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return new Date(at).toISOString().slice(0, 10);
}

/**
 * Brings a container's children in line with a list, keyed: rows that stay
 * keep their element (and what the user typed into it), new ones are made,
 * gone ones removed, and the order follows the list.
 * @template T
 * @param {HTMLElement} container
 * @param {T[]} items
 * @param {(item: T) => string} key
 * @param {(item: T) => HTMLElement} create
 * @param {(element: HTMLElement, item: T) => void} [update]
 */
export function reconcile(container, items, key, create, update) {
  /** @type {Map<string, HTMLElement>} */
  const existing = new Map();
  for (const child of [...container.children]) {
    const id = /** @type {HTMLElement} */ (child).dataset.key;
    if (id !== undefined) existing.set(id, /** @type {HTMLElement} */ (child));
    else child.remove();
  }
  /** @type {HTMLElement | null} */
  let previous = null;
  for (const item of items) {
    const id = key(item);
    let element = existing.get(id);
    if (element) {
      existing.delete(id);
      update?.(element, item);
    } else {
      element = create(item);
      element.dataset.key = id;
      update?.(element, item);
    }
    /** @type {Element | null} */
    const expected = previous ? previous.nextElementSibling : container.firstElementChild;
    if (expected !== element) container.insertBefore(element, expected);
    previous = element;
  }
  for (const element of existing.values()) element.remove();
}
