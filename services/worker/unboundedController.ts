import { setMaxListeners } from 'node:events';

/**
 * An abort controller whose signal any number of concurrent tasks may
 * listen to (each removing its listener when it ends) without Node's
 * "possible memory leak" warning, which counts listeners, not leaks.
 */
export function unboundedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}
