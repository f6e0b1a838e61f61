// @ts-check
/**
 * What the relay's token may do, asked of the API once per page load
 * (`auth.whoami`): the page offers only that. The API checks every call
 * again, so this is about what to show, never about what is allowed.
 */
import { call, describeError } from './api.js';

/** @typedef {{ principal: string | null, scopes: ReadonlySet<string>, problem: string | null }} Grant */

/**
 * The relay's principal and scopes; an engine that cannot say (an older one,
 * or none answering) grants nothing here, and `problem` says why.
 * @returns {Promise<Grant>}
 */
export async function loadGrant() {
  try {
    const who = await call('auth.whoami', {});
    return { principal: String(who.principal), scopes: new Set(/** @type {string[]} */ (who.scopes)), problem: null };
  } catch (error) {
    return { principal: null, scopes: new Set(), problem: describeError(error) };
  }
}

/** The header's note of whom the page acts as. @param {HTMLElement} pill @param {Grant} grant */
export function showGrant(pill, grant) {
  pill.hidden = false;
  pill.dataset.scopes = [...grant.scopes].join(' ');
  if (grant.principal === null) {
    pill.textContent = 'token unknown';
    pill.className = 'pill warn';
    pill.title = `the page could not learn what its token may do, so it offers no changes: ${grant.problem}`;
    return;
  }
  pill.textContent = `${grant.principal} · ${[...grant.scopes].join(', ')}`;
  pill.className = 'pill idle';
  pill.title = 'whom the relay’s token names, and what it may do: the page offers only that';
}
