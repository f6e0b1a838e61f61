import { randomUUID } from 'node:crypto';
import type { Bus } from '../../domain/index.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub } from '../../bus/index.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient, type ClientOptions } from '../../client/index.ts';
import { type TurnloomServer, type TurnloomServerOptions, startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from './tempDir.ts';

export interface ApiFixture {
  server: TurnloomServer;
  store: LmdbStore;
  prefix: string;
  /** A new bus connection to the same subject space. */
  connect(): Promise<Bus>;
  client(options?: ClientOptions): Promise<TurnloomClient>;
  dispose(): Promise<void>;
}

/**
 * An engine and its API on a bus: in-process, or on a NATS server given by
 * URL. Each fixture uses its own subject prefix, so test files sharing the run's
 * nats-server never hear each other.
 */
export async function openApiFixture(options: { natsUrl?: string } & Partial<Omit<TurnloomServerOptions, 'bus' | 'store' | 'prefix'>> = {}): Promise<ApiFixture> {
  const dir = tempDir('turnloom-api-');
  const prefix = `t${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const hub = new InProcessHub();
  const buses: Bus[] = [];
  const connect = async () => {
    const bus = options.natsUrl ? await NatsBus.connect({ servers: options.natsUrl }) : hub.connect();
    buses.push(bus);
    return bus;
  };
  const store = LmdbStore.open(dir.path);
  const server = await startTurnloomServer({ ...options, bus: await connect(), store, prefix });
  return {
    server,
    store,
    prefix,
    connect,
    client: async (clientOptions = {}) => new TurnloomClient(await connect(), { prefix, ...clientOptions }),
    dispose: async () => {
      await server.stop();
      await Promise.all(buses.map((bus) => bus.close()));
      dir.remove();
    },
  };
}
