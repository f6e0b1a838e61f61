// @ts-check
/** The relay's HTTP surface: the API (`POST /api/<method>`) and the laid-out charts. */

/** An answer `{ error }` of the API, or the relay not answering at all (`unavailable`). */
export class ApiError extends Error {
  /** @param {string} code @param {string} message @param {unknown} [details] */
  constructor(code, message, details) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/**
 * Calls one API method through the relay; resolves with `result`, rejects with an ApiError.
 * @param {string} method
 * @param {Record<string, unknown>} [params]
 * @returns {Promise<any>}
 */
export async function call(method, params = {}) {
  let response;
  try {
    response = await fetch(`/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(params),
    });
  } catch (error) {
    throw new ApiError('unavailable', `the relay did not answer ${method} (${error instanceof Error ? error.message : String(error)})`);
  }
  /** @type {any} */
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError('unavailable', `the relay answered ${method} with HTTP ${response.status} and no JSON`);
  }
  if (body && body.error) throw new ApiError(body.error.code ?? 'error', body.error.message ?? 'failed', body.error.details);
  if (!response.ok) throw new ApiError(`http_${response.status}`, `the relay answered ${method} with HTTP ${response.status}`);
  return body.result;
}

/**
 * @typedef {import('./charts.js').ChartLayout} ChartLayout
 * @typedef {{ machines: ChartLayout[], fitted: ChartLayout[] }} ChartLayouts
 */

/** @type {Promise<ChartLayouts> | null} */
let charts = null;

/** The four machines, laid out in full and fitted; fetched once per page load. */
export function fetchCharts() {
  charts ??= fetch('/charts.json')
    .then((response) => {
      if (!response.ok) throw new ApiError(`http_${response.status}`, `the relay answered /charts.json with HTTP ${response.status}`);
      return response.json();
    })
    .then((body) => /** @type {ChartLayouts} */ ({ machines: body.machines, fitted: body.fitted }))
    .catch((error) => {
      charts = null;
      throw error;
    });
  return charts;
}

/** Says what went wrong in one line. @param {unknown} error */
export function describeError(error) {
  if (error instanceof ApiError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
