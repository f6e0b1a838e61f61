import type { Bus, ProviderAdapter, ProviderChoice, ThreadStore } from '../domain/index.ts';
import { MSGPACK, type Subjects, encode, subjects as subjectsFor } from '../bus/index.ts';
import { ApiServer, type AuthConfig, Authenticator, DEFAULT_MAX_PAYLOAD, type ThreadWatchesOptions, eventLimitFor, publishCommittedEvents } from './api/index.ts';
import { Engine } from './engine/engine.ts';
import { CrashRepair } from './runtime/crashRepair.ts';
import { Deadlines } from './runtime/deadlines.ts';
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
  /** Limits of `thread.watch` (how long a watch lives unrenewed, how many). */
  watches?: ThreadWatchesOptions;
}

export interface TurnloomServer {
  engine: Engine;
  api: ApiServer;
  runner: TurnRunner | null;
  subjects: Subjects;
  /** Settles once crash repair has gone through the turns a dead process left open, with how many it repaired. */
  repaired: Promise<number>;
  /** Stops taking requests, answers those in flight, closes the engine and its store. */
  stop(): Promise<void>;
}

/**
 * The engine with its API and event publishing on one bus: what `turnloom
 * serve` runs. The store is the caller's until this resolves; after that it
 * is closed by `stop()` (or, when starting fails, before the error is thrown).
 */
export async function startTurnloomServer(options: TurnloomServerOptions): Promise<TurnloomServer> {
  const subjects = subjectsFor(options.prefix);
  const engine = await Engine.open({ store: options.store, maxEventBytes: eventLimitFor(options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD) });
  const unpublish = publishCommittedEvents(engine, options.bus, subjects);
  let api: ApiServer;
  try {
    api = await new ApiServer({
      bus: options.bus,
      engine,
      subjects,
      auth: new Authenticator(options.auth ?? null),
      defaultProvider: options.defaultProvider ?? { name: 'scripted', model: null },
      ...(options.providers ? { providers: Object.keys(options.providers) } : {}),
      ...(options.maxPayloadBytes ? { maxPayloadBytes: options.maxPayloadBytes } : {}),
      ...(options.watches ? { watches: options.watches } : {}),
      version: VERSION,
    }).start();
  } catch (error) {
    unpublish();
    await engine.close();
    throw error;
  }
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
  // Publishers and the API are up: what repair writes reaches every client, and it does not hold the start.
  const repair = new CrashRepair(engine);
  const repaired = repair.run();
  return {
    engine,
    api,
    runner,
    subjects,
    repaired,
    stop: async () => {
      repair.stop();
      await api.stop();
      await repaired;
      await runner?.stop();
      deadlines.stop();
      await engine.close();
      unpublish();
    },
  };
}
