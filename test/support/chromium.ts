import { existsSync } from 'node:fs';

export const missingChromiumMessage = 'chromium is not installed: the browser tests need it (Debian: apt-get install chromium; or set CHROMIUM_PATH to a Chromium or Chrome binary)';

/** The browser the inspector's tests drive: CHROMIUM_PATH, or Debian's chromium. */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  return candidates.find((path): path is string => path !== undefined && path !== '' && existsSync(path));
}
