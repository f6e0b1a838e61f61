import { type NatsConnection, connect, headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

// A foreign client: plain nats.js and JSON text, no turnloom code on this side.
let fx: ApiFixture;
let nc: NatsConnection;

beforeAll(async () => {
  fx = await openApiFixture({ natsUrl: inject('natsUrl'), maxPayloadBytes: 64 * 1024 });
  nc = await connect({ servers: inject('natsUrl') });
});
afterAll(async () => {
  await nc.close();
  await fx.dispose();
});

async function call(method: string, body: string, contentType: string | null = 'application/json') {
  const h = natsHeaders();
  if (contentType) h.set('content-type', contentType);
  const reply = await nc.request(`${fx.prefix}.v1.api.${method}`, body, { timeout: 5_000, headers: h });
  return { contentType: reply.headers?.get('content-type'), body: JSON.parse(reply.string()) };
}

describe('a foreign client speaking raw JSON over NATS', () => {
  it('drives a thread from creation to a turn, and reads it back', async () => {
    const created = await call('thread.create', '{"title":"from outside","commandId":"ext-1"}');
    expect(created.contentType).toBe('application/json');
    const { threadId } = created.body.result;
    const started = await call('turn.start', JSON.stringify({ threadId, input: { text: 'run the tests' } }));
    expect(started.body.result).toMatchObject({ threadId, turnId: expect.stringMatching(/^turn_/) });
    const got = await call('thread.get', JSON.stringify({ threadId }));
    expect(got.body.result.thread.turns[started.body.result.turnId].messages[0].parts[0].text).toBe('run the tests');
    // Without a content-type header a JSON body is still recognised.
    expect((await call('health', '{}', null)).body.result.status).toBe('ok');
  });

  it('gets the documented error shape for bad input, and nothing is written', async () => {
    const before = fx.store.lastSeq();
    const bad = [
      await call('thread.create', '{"title": '),
      await call('thread.create', '{"title": 7}'),
      await call('thread.nope', '{}'),
      await call('thread.get', '{"threadId":"missing"}'),
      await call('thread.create', JSON.stringify({ title: 'x'.repeat(70 * 1024) })),
    ].map(({ body }) => body.error.code);
    expect(bad).toEqual(['invalid_payload', 'invalid_payload', 'not_found', 'not_found', 'invalid_payload']);
    expect(fx.store.lastSeq()).toBe(before);
  });

  it('finds the API as a NATS micro service', async () => {
    const name = fx.prefix;
    const ping = JSON.parse((await nc.request(`$SRV.PING.${name}`, '', { timeout: 2_000 })).string());
    expect(ping).toMatchObject({ type: 'io.nats.micro.v1.ping_response', name, id: fx.server.api.instance, version: '0.1.0' });
    const info = JSON.parse((await nc.request(`$SRV.INFO.${name}.${fx.server.api.instance}`, '', { timeout: 2_000 })).string());
    expect(info.type).toBe('io.nats.micro.v1.info_response');
    expect(info.endpoints.map((endpoint: { subject: string }) => endpoint.subject)).toContain(`${fx.prefix}.v1.api.turn.start`);
    await call('health', '{}');
    const stats = JSON.parse((await nc.request(`$SRV.STATS.${name}`, '', { timeout: 2_000 })).string());
    const health = stats.endpoints.find((endpoint: { name: string }) => endpoint.name === 'health');
    expect(stats.endpoints.every((endpoint: { name: string }) => /^[A-Za-z0-9_-]+$/.test(endpoint.name))).toBe(true);
    expect(health.num_requests).toBeGreaterThanOrEqual(2);
    expect(health.queue_group).toBe('turnloom-api');
    expect(Date.parse(stats.started)).not.toBeNaN();
  });

  it('receives committed events with their sequence', async () => {
    const { threadId } = (await call('thread.create', '{}')).body.result;
    const sub = nc.subscribe(`${fx.prefix}.v1.evt.${threadId}`, { max: 1 });
    await nc.flush();
    await call('thread.rename', JSON.stringify({ threadId, title: 'renamed' }));
    for await (const msg of sub) {
      expect(msg.headers?.get('turnloom-seq')).toBe('2');
      expect(msg.headers?.get('content-type')).toBe('application/msgpack');
    }
  });
});
