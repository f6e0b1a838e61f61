import { afterEach, describe, expect, it } from 'vitest';
import { JSON_TYPE } from '../../bus/index.ts';
import type { TurnloomClient } from '../../client/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

async function pageAll(client: TurnloomClient, params: { limit?: number; includeArchived?: boolean }, between?: (page: number) => Promise<void>) {
  const ids: string[] = [];
  let pages = 0;
  for (let cursor: string | undefined; ; ) {
    const answer = await client.call('thread.list', { ...params, ...(cursor ? { cursor } : {}) });
    ids.push(...answer.threads.map((thread) => thread.id));
    pages += 1;
    if (answer.nextCursor === null) return { ids, pages };
    cursor = answer.nextCursor;
    await between?.(pages);
  }
}

describe('thread.list pages', () => {
  let fx: ApiFixture;
  afterEach(async () => {
    await fx.dispose();
  });

  it('newest first, by limit and cursor, and stays stable while threads are added', async () => {
    fx = await openApiFixture();
    const client = await fx.client();
    const created: string[] = [];
    for (let index = 0; index < 250; index++) created.push((await client.call('thread.create', { threadId: `th-${index}` })).threadId);

    const first = await client.call('thread.list', {});
    expect(first.threads).toHaveLength(100);
    expect(first.threads[0]!.id).toBe('th-249');

    let added = 0;
    const { ids, pages } = await pageAll(client, { limit: 100 }, async () => {
      for (let index = 0; index < 7; index++) await client.call('thread.create', { threadId: `late-${added++}` });
    });
    expect(pages).toBe(3);
    expect(ids).toEqual(created.slice().reverse());

    await client.call('thread.archive', { threadId: 'th-10' });
    expect((await pageAll(client, { limit: 1_000 })).ids).not.toContain('th-10');
    expect((await pageAll(client, { limit: 1_000, includeArchived: true })).ids).toContain('th-10');
  });

  it('cuts a page to fit the reply limit in JSON, however large the titles, and refuses a forged cursor', async () => {
    fx = await openApiFixture({ maxPayloadBytes: 64 * 1024 });
    const client = await fx.client({ contentType: JSON_TYPE });
    // U+0001 is one byte of UTF-8 and six of JSON: a page sized by msgpack would not travel as JSON.
    for (let index = 0; index < 200; index++) await client.call('thread.create', { threadId: `wide-${index}`, title: '\u0001'.repeat(200) });
    const { ids, pages } = await pageAll(client, { limit: 1_000 });
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
    expect(pages).toBeGreaterThan(1);
    await expect(client.call('thread.list', { cursor: 'bm90LWEtY3Vyc29y' })).rejects.toMatchObject({ code: 'invalid_payload' });
    await expect(client.call('thread.list', { limit: 1_001 })).rejects.toMatchObject({ code: 'invalid_payload' });
  });
});
