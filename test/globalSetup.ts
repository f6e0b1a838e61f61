import type { TestProject } from 'vitest/node';
import { ensureNatsServer, startNatsServer } from './support/natsServer.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    natsUrl: string;
  }
}

/** One private nats-server for the whole run; tests needing faults start their own. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  ensureNatsServer();
  const server = await startNatsServer();
  project.provide('natsUrl', server.url);
  return () => server.dispose();
}
