import type { ThreadStore } from '../adapters/threadStore.ts';
import { type Bus, type Subjects, subjects as subjectsFor } from '../bus/index.ts';
import { ApiServer, type AuthConfig, Authenticator, publishCommittedEvents } from './api/index.ts';
import type { ProviderChoice } from './engine/domainEvents.ts';
import { Engine } from './engine/engine.ts';

export const VERSION = '0.1.0';

export interface TurnloomServerOptions {
  bus: Bus;
  store: ThreadStore;
  prefix?: string;
  /** Tokens and scopes; `null` (default) lets every caller do everything, for a private in-process bus. */
  auth?: AuthConfig | null;
  defaultProvider?: ProviderChoice;
  maxPayloadBytes?: number;
}

export interface TurnloomServer {
  engine: Engine;
  api: ApiServer;
  subjects: Subjects;
  /** Stops taking requests, answers those in flight, closes the engine and its store. */
  stop(): Promise<void>;
}

/** The engine with its API and event publishing on one bus: what `turnloom serve` runs. */
export async function startTurnloomServer(options: TurnloomServerOptions): Promise<TurnloomServer> {
  const subjects = subjectsFor(options.prefix);
  const engine = await Engine.open({ store: options.store });
  const unpublish = publishCommittedEvents(engine, options.bus, subjects);
  const api = new ApiServer({
    bus: options.bus,
    engine,
    subjects,
    auth: new Authenticator(options.auth ?? null),
    defaultProvider: options.defaultProvider ?? { name: 'scripted', model: null },
    ...(options.maxPayloadBytes ? { maxPayloadBytes: options.maxPayloadBytes } : {}),
    version: VERSION,
  }).start();
  return {
    engine,
    api,
    subjects,
    stop: async () => {
      await api.stop();
      await engine.close();
      unpublish();
    },
  };
}
