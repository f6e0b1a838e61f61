import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, BusError, type BusMessage } from '../../domain/index.ts';

export interface BusWorld {
  /** A new connection to the same subject space. */
  connect(): Promise<Bus>;
  dispose(): Promise<void>;
}

const text = (value: string) => new TextEncoder().encode(value);
const read = (message: BusMessage) => new TextDecoder().decode(message.data);

/** Collects what a subscription receives. */
function collect(bus: Bus, subject: string, queue?: string) {
  const received: BusMessage[] = [];
  const subscription = bus.subscribe(subject, (message) => received.push(message), queue ? { queue } : {});
  return { received, subscription };
}

async function settle(...buses: Bus[]): Promise<void> {
  for (const bus of buses) await bus.flush();
  await sleep(30);
  for (const bus of buses) await bus.flush();
}

/** The one set of semantics both transports must give. */
export function busContract(transport: string, makeWorld: () => Promise<BusWorld>): void {
  describe(`bus contract: ${transport}`, () => {
    let world: BusWorld;
    let a: Bus;
    let b: Bus;
    beforeAll(async () => {
      world = await makeWorld();
    });
    afterAll(async () => {
      await world.dispose();
    });
    beforeAll(async () => {
      a = await world.connect();
      b = await world.connect();
    });
    afterEach(async () => {
      await settle(a, b);
    });

    it('delivers to every subscriber on any connection, with data and headers intact', async () => {
      const mine = collect(a, 'contract.exact');
      const theirs = collect(b, 'contract.exact');
      await settle(a, b);
      a.publish('contract.exact', text('hello'), { headers: { 'Content-Type': 'text/plain', 'x-seq': '7' } });
      await settle(a, b);
      for (const { received } of [mine, theirs]) {
        expect(received).toHaveLength(1);
        expect(read(received[0]!)).toBe('hello');
        expect(received[0]!.headers).toMatchObject({ 'content-type': 'text/plain', 'x-seq': '7' });
      }
      mine.subscription.unsubscribe();
      theirs.subscription.unsubscribe();
    });

    it('gives every message the headers it was published with, however often a record repeats or changes', async () => {
      const inbox = collect(b, 'contract.headers');
      await settle(a, b);
      const expected: Array<Record<string, string>> = [];
      const publish = (headers: Record<string, string>) => {
        expected.push(Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value])));
        a.publish('contract.headers', text(String(expected.length)), { headers });
      };
      const reused: Record<string, string> = { 'content-type': 'application/msgpack' };
      for (let i = 0; i < 1_500; i++) {
        publish(reused);
        // A value per message, more distinct records than a transport would keep.
        publish({ 'content-type': 'application/msgpack', 'x-seq': String(i) });
        // The same record object, changed in place.
        if (i % 500 === 499) reused['x-changed'] = String(i);
      }
      publish({ 'x-seq': '7', 'content-type': 'application/msgpack' });
      publish({ 'Content-Type': 'application/json' });
      publish({});
      await settle(a, b);
      expect(inbox.received.map(read)).toEqual(expected.map((_, n) => String(n + 1)));
      expect(inbox.received.map((message) => message.headers)).toEqual(expected);
      inbox.subscription.unsubscribe();
    });

    it('matches * to exactly one token and > to one or more at the end', async () => {
      const star = collect(b, 'contract.w.*.end');
      const tail = collect(b, 'contract.w.>');
      await settle(a, b);
      for (const subject of ['contract.w.x.end', 'contract.w.x.y.end', 'contract.w', 'contract.w.only', 'contract.w.a.b.c']) a.publish(subject, text(subject));
      await settle(a, b);
      expect(star.received.map(read)).toEqual(['contract.w.x.end']);
      expect(tail.received.map(read)).toEqual(['contract.w.x.end', 'contract.w.x.y.end', 'contract.w.only', 'contract.w.a.b.c']);
      star.subscription.unsubscribe();
      tail.subscription.unsubscribe();
    });

    it('splits a queue group so each message reaches one member, while plain subscribers get all', async () => {
      const members = [collect(a, 'contract.q', 'workers'), collect(b, 'contract.q', 'workers'), collect(b, 'contract.q', 'workers')];
      const plain = collect(a, 'contract.q');
      await settle(a, b);
      for (let i = 0; i < 90; i++) a.publish('contract.q', text(String(i)));
      await settle(a, b);
      const delivered = members.flatMap(({ received }) => received.map(read));
      expect(delivered.sort()).toEqual(Array.from({ length: 90 }, (_, i) => String(i)).sort());
      expect(plain.received).toHaveLength(90);
      for (const member of [...members, plain]) member.subscription.unsubscribe();
    });

    it('keeps one publisher’s order', async () => {
      const inbox = collect(b, 'contract.order');
      await settle(a, b);
      for (let i = 0; i < 500; i++) a.publish('contract.order', text(String(i)));
      await settle(a, b);
      expect(inbox.received.map(read)).toEqual(Array.from({ length: 500 }, (_, i) => String(i)));
      inbox.subscription.unsubscribe();
    });

    it('answers a request with its reply and headers', async () => {
      const responder = b.subscribe('contract.echo', (message) => {
        a.publish(message.reply!, text(`echo:${read(message)}`), { headers: { 'x-answer': message.headers['x-question'] ?? '' } });
      });
      await settle(a, b);
      const reply = await a.request('contract.echo', text('ping'), { headers: { 'x-question': '42' }, timeoutMs: 2_000 });
      expect(read(reply)).toBe('echo:ping');
      expect(reply.headers['x-answer']).toBe('42');
      responder.unsubscribe();
    });

    it('fails a request at once with no responders, and after the timeout with a silent one', async () => {
      await expect(a.request('contract.nobody', text('?'), { timeoutMs: 2_000 })).rejects.toMatchObject({ kind: 'no_responders', code: 'unavailable' });
      const silent = b.subscribe('contract.silent', () => undefined);
      await settle(a, b);
      const started = Date.now();
      const error = await a.request('contract.silent', text('?'), { timeoutMs: 200 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(BusError);
      expect((error as BusError).kind).toBe('timeout');
      expect(Date.now() - started).toBeGreaterThanOrEqual(150);
      silent.unsubscribe();
    });

    it('stops delivering after unsubscribe', async () => {
      const inbox = collect(b, 'contract.unsub');
      await settle(a, b);
      a.publish('contract.unsub', text('1'));
      await settle(a, b);
      inbox.subscription.unsubscribe();
      await settle(a, b);
      a.publish('contract.unsub', text('2'));
      await settle(a, b);
      expect(inbox.received.map(read)).toEqual(['1']);
    });

    it('refuses invalid subjects with a typed error', () => {
      for (const subject of ['', 'a..b', 'has space', 'a.*', 'a.>']) {
        expect(() => a.publish(subject, text('x'))).toThrow(BusError);
      }
      expect(() => a.subscribe('a.>.b', () => undefined)).toThrow(BusError);
    });

    it('drains: pending messages are delivered, then the connection is closed', async () => {
      const c = await world.connect();
      const statuses: string[] = [];
      c.onStatus((status) => statuses.push(status));
      const inbox = collect(c, 'contract.drain');
      await settle(a, c);
      for (let i = 0; i < 50; i++) a.publish('contract.drain', text(String(i)));
      await a.flush();
      await sleep(30);
      await c.drain();
      expect(inbox.received).toHaveLength(50);
      expect(c.status()).toBe('closed');
      expect(statuses).toContain('closed');
      expect(() => c.publish('contract.drain', text('late'))).toThrow(BusError);
    });

    it('reports itself connected while open', () => {
      expect(a.status()).toBe('connected');
    });

    afterAll(async () => {
      await a.close();
      await b.close();
    });
  });
}
