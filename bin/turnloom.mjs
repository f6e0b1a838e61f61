#!/usr/bin/env node
// Runs the bundled JavaScript in dist/bin/ (built by `npm ci` through `prepare`),
// unless a source file is newer than that build: then the TypeScript sources
// run directly through tsx, so an edited checkout never runs stale code.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = `${root}dist/bin/turnloom.js`;
const sourceDirs = ['domain', 'machines', 'protocol', 'lib', 'services', 'adapters', 'bus', 'client', 'inspector', 'cli'];

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function buildIsCurrent() {
  if (!existsSync(built)) return false;
  const builtAt = statSync(built).mtimeMs;
  return sourceDirs.every((dir) => !existsSync(`${root}${dir}`) || newestSource(`${root}${dir}`) <= builtAt);
}

if (buildIsCurrent()) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/main.ts');
}
