import { scrubbedEnv } from '../tools/scrubbedEnv.ts';

/**
 * What a program needs to find its tools, its user's caches and its
 * language, and nothing of the user's settings or credentials: where
 * programs are, who and where the user is, language and time zone, the
 * terminal, the temporary folder, and Windows' equivalents.
 */
const basics = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TERM', 'TMPDIR', 'TEMP', 'TMP', 'SYSTEMROOT', 'COMSPEC', 'PATHEXT', 'USERPROFILE', 'APPDATA', 'LOCALAPPDATA']);

/**
 * A stdio server's whole environment: the basics of `env` (locale
 * variables `LC_*` among them; none shaped like a secret) and exactly the
 * variables its spec names. A server is a program the user chose, not one
 * the model steers, but it is still not told what turnloom was given:
 * a key reaches it only when its spec says so.
 */
export function serverEnv(env: NodeJS.ProcessEnv, named: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(scrubbedEnv(env)).filter(([name]) => basics.has(name.toUpperCase()) || name.startsWith('LC_')));
  return { ...base, ...named };
}
