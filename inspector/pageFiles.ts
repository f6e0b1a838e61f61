import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** The page ships beside this file; nothing it needs comes from anywhere else. */
const pageDir = fileURLToPath(new URL('./page/', import.meta.url));

const contentTypes: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
};

export interface PageFile {
  body: Buffer;
  contentType: string;
}

/**
 * A file of the page by its plain name (`app.js`), or `undefined`: names
 * with a path separator, a leading dot or an unknown extension are never
 * looked up, so nothing outside the page's folder can be read.
 */
export async function readPageFile(name: string): Promise<PageFile | undefined> {
  const match = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*\.([a-z]+)$/.exec(name);
  const contentType = match ? contentTypes[match[1]!] : undefined;
  if (!contentType) return undefined;
  try {
    return { body: await readFile(`${pageDir}${name}`), contentType };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
