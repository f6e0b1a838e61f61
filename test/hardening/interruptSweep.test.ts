import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import type { TurnloomClient } from '../../client/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

const settledStates = ['completed', 'failed', 'interrupted'];
const script: ScriptInput = {
  chunkSize: 8,
  delayMs: 30,
  steps: [
    [{ reasoning: 'Thinking about it for a while, carefully.' }, { text: 'A streaming answer that takes a good second to type out in full.' }, { toolCall: { name: 'probe', result: 'ok', durationMs: 200 } }],
    [{ text: 'And the end of the answer, typed slowly as well.' }],
  ],
};

/**
 * Interrupting at any moment of a streaming turn must settle it and never leave a
 * promise unobserved: vitest fails the run on an unhandled rejection, and the
 * process-level listener below counts any that slip through.
 */
describe('interrupt sweep (in-process)', () => {
  let fx: ApiFixture;
  let client: TurnloomClient;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    fx = await openApiFixture({ providers: { scripted: new ScriptedProvider(script) }, interruptDeadlineMs: 5_000 });
    client = await fx.client();
  });
  afterAll(async () => {
    await fx.dispose();
    process.off('unhandledRejection', onUnhandled);
  });

  it('settles every turn interrupted 0–600 ms after turn.start, with nothing unhandled', async () => {
    const delays = Array.from({ length: 25 }, (_, index) => index * 25);
    const turns: Array<{ threadId: string; turnId: string }> = [];
    for (const delay of delays) {
      const { threadId } = await client.call('thread.create', { title: `sweep ${delay}` });
      const { turnId } = await client.call('turn.start', { threadId, input: { text: 'go' } });
      await sleep(delay);
      await client.call('turn.interrupt', { threadId, turnId }).catch((error: { code?: string }) => {
        // The turn may already have finished; anything else is a failure.
        if (error.code !== 'illegal_transition') throw error;
      });
      turns.push({ threadId, turnId });
    }
    for (const { threadId, turnId } of turns) {
      await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 15_000 }).toBeOneOf(settledStates);
    }
    await sleep(100);
    expect(unhandled).toEqual([]);
  });
});
