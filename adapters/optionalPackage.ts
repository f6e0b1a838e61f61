import { createRequire } from 'node:module';
import { TurnloomError } from '../domain/index.ts';

const require = createRequire(import.meta.url);

/**
 * Whether a package turnloom leaves to its user (an optional peer
 * dependency: a provider's SDK, the OpenTelemetry SDK) can be loaded from
 * here. Asked without loading it, so it costs a lookup, not an import.
 */
export function isInstalled(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch (error) {
    // Found, but not loadable by `require` (an ESM-only entry): it is there all the same.
    return (error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND';
  }
}

/** The one-line `unavailable` error of something that needs packages that are not installed, naming them and how to install them. */
export function requirePackages(what: string, names: readonly string[]): void {
  const missing = names.filter((name) => !isInstalled(name));
  if (missing.length === 0) return;
  const listed = missing.map((name) => `"${name}"`).join(', ');
  throw new TurnloomError('unavailable', `${what} needs ${missing.length === 1 ? 'the package' : 'the packages'} ${listed}, not installed here: npm install ${missing.join(' ')}`, { packages: missing });
}
