import { type NatsConnection, connect, headers as natsHeaders } from '@nats-io/transport-node';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { MSGPACK, encode } from '../bus/index.ts';
import { NatsBus } from '../bus/natsBus.ts';
import { TurnloomClient } from '../client/index.ts';
import { startTurnloomServer } from '../services/turnloomServer.ts';
import { type NatsServerHandle, startNatsServer } from '../test/support/natsServer.ts';
import { tempDir } from '../test/support/tempDir.ts';
import { type Figure, type Suite, compared, interleaved } from './figure.ts';

/** Clients calling at once in both figures, on each side: one connection each, as 16 separate programs would. */
const CLIENTS = 16;

/** Sizes of a full run, and of the smoke run the test suite does (which only proves the code still runs). */
const sizes = (smoke: boolean) =>
  smoke ? { rounds: 1, turnStartsPerRound: 32, seconds: 0.2, warmup: 16 } : { rounds: 5, turnStartsPerRound: 500, seconds: 1.5, warmup: 200 };

/**
 * Undoes what a benchmark set up, last first, whether it finished or threw:
 * a failed cleanup step is reported and the others still run.
 */
export class Teardown {
  private readonly steps: Array<{ what: string; undo: () => unknown }> = [];

  add(what: string, undo: () => unknown): void {
    this.steps.push({ what, undo });
  }

  /** Keeps `value` and registers how to undo it; returns it, so setup reads as one line per resource. */
  keep<T>(what: string, value: T, undo: (value: T) => unknown): T {
    this.add(what, () => undo(value));
    return value;
  }

  async run(): Promise<void> {
    for (const { what, undo } of this.steps.splice(0).reverse()) {
      try {
        await undo();
      } catch (error) {
        console.error(`bench: could not clean up ${what}`, error);
      }
    }
  }
}

/** A private nats-server without JetStream (nothing here needs it), on a free port, never 4222. */
export async function privateNats(teardown: Teardown): Promise<NatsServerHandle> {
  return teardown.keep('nats-server', await startNatsServer({ jetstream: false }), (nats) => nats.dispose());
}

/** Runs `work` from `loops` concurrent loops for `seconds`; completed operations per second. */
export async function timedRate(seconds: number, loops: number, work: (loop: number) => Promise<void>): Promise<number> {
  let done = 0;
  const started = performance.now();
  const until = started + seconds * 1_000;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (performance.now() < until) {
        await work(loop);
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - started) / 1_000);
}

/** Runs `work` once per item, `loops` at a time, each loop taking the next item; items per second. */
async function countedRate<T>(items: readonly T[], loops: number, work: (item: T, loop: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (next < items.length) await work(items[next++]!, loop);
    }),
  );
  return items.length / ((performance.now() - started) / 1_000);
}

/**
 * The comparison: plain request/reply to a responder that answers with what
 * it got, the same bytes and headers a turnloom call carries, from
 * `CLIENTS` connections of their own; the responder has one, like the engine.
 */
async function rawEcho(url: string, teardown: Teardown): Promise<{ clients: NatsConnection[]; subject: string }> {
  const subject = 'bench.echo';
  const responder = teardown.keep('raw responder', await connect({ servers: url }), (nc) => nc.close());
  responder.subscribe(subject, { callback: (_error, msg) => void msg.respond(msg.data) });
  await responder.flush();
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connect({ servers: url })));
  for (const nc of clients) teardown.add('raw client', () => nc.close());
  return { clients, subject };
}

const rawRequest = (nc: NatsConnection, subject: string, payload: Uint8Array) => {
  const headers = natsHeaders();
  headers.set('content-type', MSGPACK);
  return nc.request(subject, payload, { timeout: 10_000, headers });
};

/** Threads for the turns to start: each turn gets a thread of its own, so one turn per thread never refuses one. */
async function prepareThreads(clients: TurnloomClient[], count: number): Promise<string[]> {
  const threadIds: string[] = [];
  await countedRate(
    Array.from({ length: count }, (_, i) => i),
    clients.length,
    async (i, loop) => {
      threadIds.push((await clients[loop]!.call('thread.create', { title: `bench ${i}` })).threadId);
    },
  );
  return threadIds;
}

export const busSuite: Suite = {
  name: 'bus',
  async run({ smoke }): Promise<Figure[]> {
    const size = sizes(smoke);
    const teardown = new Teardown();
    try {
      const nats = await privateNats(teardown);
      const dir = teardown.keep('data folder', tempDir('turnloom-busbench-'), (folder) => folder.remove());
      const engineBus = teardown.keep('engine connection', await NatsBus.connect({ servers: nats.url }), (bus) => bus.close());
      // No providers: no worker runs the turns, so what is measured is the API accepting them (durably).
      const server = teardown.keep('engine', await startTurnloomServer({ bus: engineBus, store: LmdbStore.open(dir.path), prefix: 'bench' }), (s) => s.stop());
      const clients: TurnloomClient[] = [];
      for (let i = 0; i < CLIENTS; i++) {
        const bus = teardown.keep('client connection', await NatsBus.connect({ servers: nats.url }), (b) => b.close());
        clients.push(new TurnloomClient(bus, { prefix: 'bench' }));
      }
      await server.repaired;
      const raw = await rawEcho(nats.url, teardown);

      const startParams = (threadId: string) => ({ threadId, input: { text: 'bench turn' } });
      const startPayload = encode(startParams('thr_0123456789abcdef01234567'), MSGPACK);
      const rawRate = () => timedRate(size.seconds, CLIENTS, async (loop) => void (await rawRequest(raw.clients[loop]!, raw.subject, startPayload)));

      /**
       * `count` turns, each on a thread of its own made just before (untimed, so it is still loaded, as a
       * thread someone just opened is), timed; then, untimed, each is interrupted. The engine offers every
       * waiting turn again each second (an offer may be lost), so turns left waiting from earlier rounds would
       * weigh on later ones: this way every round starts with none waiting.
       */
      const perRound: number[] = [];
      let latest: string[] = [];
      const startTurns = async (count: number) => {
        const threads = await prepareThreads(clients, count);
        const rate = await countedRate(threads, CLIENTS, async (threadId, loop) => void (await clients[loop]!.call('turn.start', startParams(threadId))));
        await countedRate(threads, CLIENTS, async (threadId, loop) => void (await clients[loop]!.call('turn.interrupt', { threadId })));
        perRound.push(rate);
        latest = threads;
        return rate;
      };

      // Warm both paths up (JIT, LMDB pages, connections) before anything counts.
      await startTurns(size.warmup);
      perRound.length = 0;
      await timedRate(size.seconds / 2, CLIENTS, async (loop) => void (await rawRequest(raw.clients[loop]!, raw.subject, startPayload)));

      const starts = await interleaved(size.rounds, rawRate, () => startTurns(size.turnStartsPerRound));

      // Each client reads a thread of its own from the last round, holding one (interrupted) turn.
      const readable = latest.slice(0, CLIENTS);
      const getPayload = encode({ threadId: readable[0]! }, MSGPACK);
      const gets = await interleaved(
        size.rounds,
        () => timedRate(size.seconds, CLIENTS, async (loop) => void (await rawRequest(raw.clients[loop]!, raw.subject, getPayload))),
        () => timedRate(size.seconds, CLIENTS, async (loop) => void (await clients[loop]!.call('thread.get', { threadId: readable[loop]! }))),
      );

      return [
        compared(
          {
            key: 'turnStartNats16',
            title: `turn.start accepted over NATS, ${CLIENTS} clients`,
            unit: 'turns/s',
            value: starts.subject,
            comparison: { label: `raw NATS request/reply, ${CLIENTS} clients`, value: starts.baseline },
            target: { on: 'ratio', op: '>=', bound: 0.3 },
            note:
              `${starts.rounds} rounds of ${size.turnStartsPerRound} turns, each on a thread of its own made just before, durable in LMDB, no worker, interrupted (untimed) after each round; ` +
              `rounds ${perRound.map((rate) => rate.toFixed(0)).join(', ')}/s; raw: ${size.seconds} s of echo per round; medians`,
          },
          smoke,
        ),
        compared(
          {
            key: 'threadGetNats16',
            title: `thread.get over NATS, ${CLIENTS} clients`,
            unit: 'req/s',
            value: gets.subject,
            comparison: { label: `raw NATS request/reply, ${CLIENTS} clients`, value: gets.baseline },
            target: { on: 'ratio', op: '>=', bound: 0.8 },
            note: `${gets.rounds} rounds of ${size.seconds} s each side, one thread per client holding one turn; raw echo answers with the request's bytes; medians`,
          },
          smoke,
        ),
      ];
    } finally {
      await teardown.run();
    }
  },
};
