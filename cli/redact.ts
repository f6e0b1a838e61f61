import { formatWithOptions } from 'node:util';
import { visible } from './terminalText.ts';

/**
 * Secrets this process knows (NATS passwords and tokens, API keys, auth
 * tokens) and the one place that scrubs them from what the CLI prints.
 */
const secrets = new Set<string>();

/**
 * Shorter values are not scrubbed as substrings: a one- or two-letter
 * "secret" would turn every line into asterisks and protects nothing.
 * Passwords inside URLs are scrubbed by their position whatever their length.
 */
const MIN_SECRET_LENGTH = 4;

export function registerSecret(value: string | undefined | null): void {
  if (!value || value.length < MIN_SECRET_LENGTH) return;
  secrets.add(value);
  // The same value as it appears inside a URL.
  const encoded = encodeURIComponent(value);
  if (encoded !== value) secrets.add(encoded);
}

/** For tests: forget every registered secret. */
export function clearSecrets(): void {
  secrets.clear();
}

/**
 * `scheme://user:password@` → `scheme://user:***@`, and `scheme://token@` →
 * `scheme://***@`. Greedy up to the last `@` of the authority, as URL parsers
 * read it, so a password holding an unencoded `@` is scrubbed whole.
 */
const userinfo = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/:]*)(?::([^\s/]*))?@/gi;

export function redactUrlCredentials(text: string): string {
  return text.replace(userinfo, (_match, scheme: string, user: string, password: string | undefined) =>
    password === undefined ? `${scheme}***@` : `${scheme}${user}:***@`,
  );
}

/** `text` with URL passwords and every registered secret replaced by `***`. */
export function redact(text: string): string {
  let result = redactUrlCredentials(text);
  // Longest first, so a secret that contains another is replaced whole.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) result = result.split(secret).join('***');
  return result;
}

let installed = false;

/**
 * Routes console.log/info/warn/error/debug through `redact`, so a secret
 * never reaches the terminal or a log file from any layer (nats.js errors,
 * the API server's own logging), not only from the lines the CLI writes;
 * and through `visible`, so no control sequence does either.
 */
export function installRedactingConsole(): void {
  if (installed) return;
  installed = true;
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      const text = formatWithOptions({ colors: false }, ...args);
      // What the CLI prints holds text from outside (model output, file names, provider errors): shown, never obeyed.
      const clean = visible(redact(text));
      if (clean === text) original(...args);
      else original(clean);
    };
  }
}

/**
 * A line with the styles the CLI added kept (colour): the console would show
 * them as text. Whatever came from outside in it must have been made
 * `visible` already; secrets are redacted here as on the console.
 */
export function printStyled(text: string): void {
  process.stdout.write(`${redact(text)}\n`);
}
