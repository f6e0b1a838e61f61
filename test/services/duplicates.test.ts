import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command } from '../../services/engine/commands.ts';
import { type EngineFixture, createThread, openEngineFixture, rebuildFromLog, startTurn } from '../support/engineFixture.ts';

describe('idempotency under load', () => {
  let fx: EngineFixture;
  beforeAll(async () => {
    fx = await openEngineFixture();
  });
  afterAll(async () => {
    await fx.dispose();
  });

  it('takes 1,000 concurrent duplicate submissions of 20 commands into effect once each', async () => {
    const threads = Array.from({ length: 10 }, (_, i) => `th${i}`);
    for (const threadId of threads) await fx.engine.submit(createThread(threadId));
    const before = fx.store.lastSeq();

    const commands: Command[] = threads.flatMap((threadId, i): Command[] => [
      { type: 'thread.rename', commandId: `rename-${i}`, threadId, title: `renamed ${i}` },
      startTurn(threadId, `turn-${i}`),
    ]);
    const submissions = commands.flatMap((command) => Array.from({ length: 50 }, () => command));
    // Shuffle so duplicates interleave with other commands on the same thread.
    for (let i = submissions.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [submissions[i], submissions[j]] = [submissions[j]!, submissions[i]!];
    }
    expect(submissions).toHaveLength(1_000);

    const results = await Promise.all(submissions.map((command) => fx.engine.submit(command)));

    // Every duplicate got the same answer as the first.
    const answers = new Map<string, unknown>();
    for (const result of results) {
      const first = answers.get(result.commandId);
      if (first) expect(result).toEqual(first);
      else answers.set(result.commandId, result);
    }
    expect(answers.size).toBe(20);
    // And each command wrote its single event exactly once.
    expect(fx.store.lastSeq() - before).toBe(20);
    for (const threadId of threads) {
      const types = fx.store.readThreadEvents(threadId, 0, 100).map(({ event }) => event.type);
      expect(types.sort()).toEqual(['thread.created', 'thread.renamed', 'turn.requested']);
      expect(fx.store.readView(threadId)).toEqual(rebuildFromLog(fx.store, threadId));
    }
  });
});
