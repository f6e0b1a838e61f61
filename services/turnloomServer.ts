import type { ThreadStore } from '../adapters/threadStore.ts';
import { type Bus, MSGPACK, type Subjects, encode, subjects as subjectsFor } from '../bus/index.ts';
import { ApiServer, type AuthConfig, Authenticator, publishCommittedEvents } from './api/index.ts';
import type { ProviderChoice } from './engine/domainEvents.ts';
import { Engine } from './engine/engine.ts';
import { Deadlines } from './runtime/deadlines.ts';
import type { ProviderAdapter } from './runtime/providerAdapter.ts';
import { TurnRunner, type TurnRunnerOptions } from './runtime/turnRunner.ts';

export const VERSION = '0.1.0';

export interface TurnloomServerOptions {
  bus: Bus;
  store: ThreadStore;
  prefix?: string;
  /** Tokens and scopes; `null` (default) lets every caller do everything, for a private in-process bus. */
  auth?: AuthConfig | null;
  defaultProvider?: ProviderChoice;
  maxPayloadBytes?: number;
  /**
   * Run turns in this process with these providers, by name. Left out, turns
   * wait for a worker (tests drive them by hand).
   */
  providers?: Record<string, ProviderAdapter>;
  runner?: Omit<TurnRunnerOptions, 'engine' | 'adapterFor' | 'live'>;
  /** An interrupt nobody confirms is settled after this long (default 10 s). */
  interruptDeadlineMs?: number;
  /** An approval nobody answers expires after this long (default: never). */
  approvalTimeoutMs?: number | null;
}

export interface TurnloomServer {
  engine: Engine;
  api: ApiServer;
  runner: TurnRunner | null;
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
    ...(options.providers ? { providers: Object.keys(options.providers) } : {}),
    ...(options.maxPayloadBytes ? { maxPayloadBytes: options.maxPayloadBytes } : {}),
    version: VERSION,
  }).start();
  const deadlines = await new Deadlines(engine, { interruptMs: options.interruptDeadlineMs ?? 10_000, approvalMs: options.approvalTimeoutMs ?? null }).start();
  const providers = options.providers;
  const runner = providers
    ? await new TurnRunner({
        ...options.runner,
        engine,
        adapterFor: (choice) => providers[choice.name],
        live: (threadId, delta) => {
          try {
            options.bus.publish(subjects.live(threadId), encode(delta, MSGPACK), { headers: { 'content-type': MSGPACK } });
          } catch {
            // Live deltas are best effort; the durable ones are in the log.
          }
        },
      }).start()
    : null;
  return {
    engine,
    api,
    runner,
    subjects,
    stop: async () => {
      await api.stop();
      await runner?.stop();
      deadlines.stop();
      await engine.close();
      unpublish();
    },
  };
}
