import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TurnloomError } from '../../domain/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

describe('$SRV.STATS', () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await openApiFixture({ natsUrl: inject('natsUrl') });
  });
  afterAll(async () => {
    await fx.dispose();
  });

  it('reports an endpoint\'s last error by its code only, never the message (ids, principal names)', async () => {
    const client = await fx.client();
    const threadId = 'thr_secret_looking_id_0123';
    const failure = await client.call('thread.get', { threadId }).catch((error: TurnloomError) => error);
    expect((failure as TurnloomError).code).toBe('not_found');
    expect((failure as TurnloomError).message).toContain(threadId);

    // Any NATS user may ask; the service name is the fixture's own prefix, so only this server answers.
    const bus = await fx.connect();
    const reply = await bus.request(`$SRV.STATS.${fx.prefix}`, new TextEncoder().encode('{}'), { timeoutMs: 5_000 });
    const stats = JSON.parse(new TextDecoder().decode(reply.data)) as { endpoints: Array<{ name: string; num_errors: number; last_error?: string }> };
    const threadGet = stats.endpoints.find((endpoint) => endpoint.name === 'thread_get')!;
    expect(threadGet.num_errors).toBe(1);
    expect(threadGet.last_error).toBe('not_found');
    expect(JSON.stringify(stats)).not.toContain(threadId);
  });
});
