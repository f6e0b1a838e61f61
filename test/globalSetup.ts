import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { chromiumPath } from './support/chromium.ts';
import { installFromDebian } from './support/debianPackage.ts';
import { ensureNatsServer, startNatsServer } from './support/natsServer.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    natsUrl: string;
  }
}

/** One private nats-server for the whole run; tests needing faults start their own. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Commands run without --data keep their threads under the XDG data home: the tests' own, never the user's.
  const dataHome = mkdtempSync(join(tmpdir(), 'turnloom-xdg-'));
  process.env.XDG_DATA_HOME = dataHome;
  // Nor do they read the user's configuration file: an empty config home of their own (a test that wants one makes one).
  const configHome = mkdtempSync(join(tmpdir(), 'turnloom-xdg-config-'));
  process.env.XDG_CONFIG_HOME = configHome;
  ensureNatsServer();
  // The inspector's browser test drives Debian's chromium; without it that test says how to install it (and fails in CI).
  if (!chromiumPath()) installFromDebian('chromium', 'chromium');
  const server = await startNatsServer();
  project.provide('natsUrl', server.url);
  return async () => {
    await server.dispose();
    rmSync(dataHome, { recursive: true, force: true });
    rmSync(configHome, { recursive: true, force: true });
  };
}
