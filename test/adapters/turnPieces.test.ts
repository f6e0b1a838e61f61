import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnView } from '../../domain/index.ts';
import { type EngineFixture, createThread, openEngineFixture, rebuildFromLog, record, startTurn, turnEvents } from '../support/engineFixture.ts';

/** The raw rows of one turn, read straight from the documented keyspace (the store must be closed). */
async function rawTurn(dir: string, threadId: string, turnId: string) {
  const env = open({ path: dir, maxDbs: 16, readOnly: true });
  const row = env.openDB<TurnView, [string, string]>({ name: 'turns' }).get([threadId, turnId])!;
  const pieces = [...env.openDB<unknown, Array<string | number>>({ name: 'turnPieces' }).getRange({ start: [threadId, turnId], end: [threadId, turnId, '\uffff'] })];
  await env.close();
  return { row, pieces: pieces.map(({ key, value }) => ({ key: key.slice(2), value })) };
}

describe('turn rows and their pieces', () => {
  let fx: EngineFixture;
  afterEach(() => fx.dispose());

  it('appends a delta as a piece of its own, joins the pieces when the part settles, and reads back whole', async () => {
    fx = await openEngineFixture();
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th'));
    await fx.engine.submit(startTurn('th', 't1', 'the prompt'));
    await fx.engine.submit(record('th', 't1', [t.sessionStarted(), t.started(), t.step(1), { type: 'response.started', turnId: 't1', step: 1, responseId: null, model: null }]));
    await fx.engine.submit(record('th', 't1', [{ type: 'part.started', turnId: 't1', partId: 'p1', step: 1, kind: 'text' }, { type: 'part.delta', turnId: 't1', partId: 'p1', text: 'x'.repeat(50_000) }]));
    for (const text of ['one ', 'two ', 'three']) await fx.engine.submit(record('th', 't1', [{ type: 'part.delta', turnId: 't1', partId: 'p1', text }]));
    const streaming = fx.engine.readStoredView('th')!;
    expect(streaming).toEqual(await fx.engine.getThread('th'));

    await fx.restart();
    const open1 = await rawTurn(fx.dir, 'th', 't1');
    expect(JSON.stringify(open1.row).length).toBeLessThan(2_000);
    expect(open1.pieces.filter(({ key }) => key[0] === 'p1').map(({ key }) => key)).toEqual([
      ['p1', 'text', 0],
      ['p1', 'text', 50_000],
      ['p1', 'text', 50_004],
      ['p1', 'text', 50_008],
    ]);
    expect(fx.store.readTurn('th', 't1')!.messages[1].parts[0]!.text).toBe(`${'x'.repeat(50_000)}one two three`);

    await fx.engine.submit(record('th', 't1', [{ type: 'part.completed', turnId: 't1', partId: 'p1', signature: null }, ...t.toolCall('p2', 1, 'c1', { cmd: 'ls' })]));
    await fx.engine.submit(record('th', 't1', [...t.toolsStarted(1, ['c1']), t.executing('p2', 'c1'), t.result('p2', 'c1', 'a.txt\nb.txt')]));
    expect(fx.store.readView('th')).toEqual(await fx.engine.getThread('th'));
    expect(fx.store.readView('th')).toEqual(rebuildFromLog(fx.store, 'th'));

    await fx.restart();
    const settled = await rawTurn(fx.dir, 'th', 't1');
    expect(settled.pieces.map(({ key }) => key)).toEqual([
      ['p1', 'text', 0],
      ['p2', 'input', 0],
      ['p2', 'inputText', 0],
      ['p2', 'output', 0],
      [expect.stringContaining('input'), 'text', 0],
    ]);
    expect(settled.pieces[0]!.value).toBe(`${'x'.repeat(50_000)}one two three`);
    expect(settled.row.messages[1].parts.map((part) => [part.text, part.tool?.output ?? null])).toEqual([['', null], ['', null]]);
  });

  it('splits the rows of a folder written before turns had pieces, once, on open', async () => {
    fx = await openEngineFixture();
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th'));
    await fx.engine.submit(startTurn('th', 't1', 'the prompt'));
    await fx.engine.submit(record('th', 't1', [t.sessionStarted(), t.started(), t.step(1), { type: 'response.started', turnId: 't1', step: 1, responseId: null, model: null }, { type: 'part.started', turnId: 't1', partId: 'p1', step: 1, kind: 'text' }, { type: 'part.delta', turnId: 't1', partId: 'p1', text: 'begun ' }]));
    const whole = (await fx.engine.getThread('th')).turns.t1!;
    await fx.engine.close();

    // The old layout: the whole turn in its row, and no pieces at all.
    const env = open({ path: fx.dir, maxDbs: 16 });
    const pieces = env.openDB({ name: 'turnPieces' });
    await env.transaction(() => {
      for (const { key } of pieces.getRange({})) pieces.remove(key);
      env.openDB({ name: 'turns' }).put(['th', 't1'], whole);
    });
    await env.close();

    await fx.restart();
    expect(fx.store.readTurn('th', 't1')).toEqual(whole);
    await fx.engine.submit(record('th', 't1', [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: 'and carried on' }]));
    expect(fx.store.readTurn('th', 't1')!.messages[1].parts[0]!.text).toBe('begun and carried on');
    expect(fx.store.readView('th')).toEqual(rebuildFromLog(fx.store, 'th'));
  });
});
