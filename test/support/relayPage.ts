/** What a browser holds once it opened the inspector's page with its key: the relay's base address and the cookie. */
export interface RelayPage {
  base: string;
  cookie: string;
  /** `fetch` as the page's own scripts would: the cookie, and the page's origin on a POST. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/**
 * Opens a relay's printed address (`…/?key=…`) the way a browser loads it:
 * the relay answers with its cookie and a redirect to the clean address.
 */
export async function openRelayPage(pageUrl: string): Promise<RelayPage> {
  const opened = await fetch(pageUrl, { redirect: 'manual' });
  const setCookie = opened.headers.get('set-cookie');
  if (opened.status !== 303 || !setCookie) throw new Error(`opening ${pageUrl} answered ${opened.status} without the page's cookie`);
  const cookie = setCookie.split(';')[0]!;
  const base = new URL('/', pageUrl).href;
  return {
    base,
    cookie,
    fetch: (path, init = {}) =>
      fetch(new URL(path, base), {
        ...init,
        headers: { cookie, ...(init.method === 'POST' ? { origin: base.slice(0, -1) } : {}), ...(init.headers as Record<string, string> | undefined) },
      }),
  };
}
