import type { TestProject } from 'vitest/node';
import { installFromDebian } from './support/debianPackage.ts';
import { ensureNatsServer, startNatsServer } from './support/natsServer.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    natsUrl: string;
  }
}

/** One private nats-server for the whole run; tests needing faults start their own. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  ensureNatsServer();
  // The grep tool uses ripgrep when it is there; its test says what to install when it cannot be brought.
  installFromDebian('rg', 'ripgrep');
  const server = await startNatsServer();
  project.provide('natsUrl', server.url);
  return () => server.dispose();
}
