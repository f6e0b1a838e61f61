import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub, JSON_TYPE, MSGPACK, encode } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { MAX_COMMAND_NESTING, MAX_NESTING, wellFormed } from '../../domain/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from '../support/tempDir.ts';

/** `levels` arrays inside one another around a string. */
function nested(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let level = 0; level < levels; level++) value = [value];
  return value;
}

describe('values nested thousands of levels deep', () => {
  const dir = tempDir('turnloom-deep-');
  afterAll(() => dir.remove());

  it('are refused at a bound, as invalid_payload, not a stack overflow', () => {
    expect(wellFormed(nested(MAX_COMMAND_NESTING), MAX_COMMAND_NESTING)).toBeDefined();
    expect(() => wellFormed(nested(MAX_COMMAND_NESTING + 1), MAX_COMMAND_NESTING)).toThrow(expect.objectContaining({ code: 'invalid_payload', message: expect.stringContaining(`nested deeper than ${MAX_COMMAND_NESTING} levels`) }));
    expect(() => wellFormed({ a: nested(100_000) })).toThrow(expect.objectContaining({ code: 'invalid_payload', details: { maxNesting: MAX_NESTING } }));
    expect(() => encode(nested(100_000), MSGPACK)).toThrow(expect.objectContaining({ code: 'invalid_payload' }));
  });

  it('from a model: the turn fails saying why, nothing of it is stored, and the thread reads and runs on', async () => {
    const hub = new InProcessHub();
    const deep = new ScriptedProvider({ steps: [[{ toolCall: { name: 'list', input: { path: '.', deep: nested(MAX_COMMAND_NESTING + 50) } } }], [{ text: 'done' }]] });
    const plain = new ScriptedProvider({ steps: [[{ text: 'still here' }]] });
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), providers: { deep, scripted: plain }, localWorker: { sideWork: false } });
    const client = new TurnloomClient(hub.connect(), { contentType: JSON_TYPE });
    const { threadId } = await client.call('thread.create', { title: 'deep' });
    const first = await client.startTurn({ threadId, text: 'go', provider: { name: 'deep', model: null } });
    const failed = await first.done;
    expect(failed.state).toBe('failed');
    expect(failed.turn.error).toContain(`nested deeper than ${MAX_COMMAND_NESTING} levels`);
    const events = await client.call('thread.events', { threadId, after: 0 });
    expect(JSON.stringify(events).includes('[[[[[[[[[[')).toBe(false);
    const second = await client.startTurn({ threadId, text: 'again' });
    expect((await second.done).state).toBe('completed');
    const msgpack = new TurnloomClient(hub.connect(), { contentType: MSGPACK });
    expect((await msgpack.call('thread.get', { threadId })).thread.turnIds).toHaveLength(2);
    await server.stop();
  }, 30_000);

  it('from a client: one clear refusal, and the server answers the next request', async () => {
    const hub = new InProcessHub();
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path) });
    const client = new TurnloomClient(hub.connect(), { contentType: JSON_TYPE });
    const body = new TextEncoder().encode(`{"title":${'['.repeat(50_000)}${']'.repeat(50_000)}}`);
    const answer = await hub.connect().request('turnloom.v1.api.thread.create', body, { headers: { 'content-type': JSON_TYPE } });
    expect(new TextDecoder().decode(answer.data)).toMatch(/invalid_payload.*nested deeper than 1000 levels/);
    expect((await client.call('thread.create', { title: 'fine' })).threadId).toBeTruthy();
    await server.stop();
  }, 30_000);
});
