import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { tempDir } from '../support/tempDir.ts';

const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));
const settledStates = ['completed', 'failed', 'interrupted'];

/** `turnloom serve` as a user runs it: a separate process on a real nats-server, with a slow streaming script. */
function serve(dir: string, prefix: string) {
  const script = join(dir, 'script.json');
  writeFileSync(
    script,
    JSON.stringify({
      chunkSize: 8,
      delayMs: 30,
      steps: [[{ text: 'A streaming answer that takes a good second or two to type out in full, chunk by chunk.' }, { toolCall: { name: 'probe', result: 'ok', durationMs: 300 } }], [{ text: 'Done now.' }]],
    }),
  );
  const child = spawn(process.execPath, [bin, 'serve', '--nats', inject('natsUrl'), '--prefix', prefix, '--data', join(dir, 'data'), '--script', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe('turnloom serve under interrupts and SIGTERM', () => {
  const dir = tempDir('turnloom-sweep-');
  afterAll(() => dir.remove());

  it('stays up through an interrupt sweep and exits 0 on SIGTERM with 50 turns streaming, every turn settled', async () => {
    const prefix = `sweep${process.pid}`;
    const server = serve(dir.path, prefix);
    await expect.poll(() => server.output(), { timeout: 30_000 }).toContain('data:');
    const bus = await NatsBus.connect({ servers: inject('natsUrl') });
    const client = new TurnloomClient(bus, { prefix });
    try {
      const sweep: Array<{ threadId: string; turnId: string }> = [];
      for (let index = 0; index < 25; index++) {
        const { threadId } = await client.call('thread.create', { title: `sweep ${index}` });
        const { turnId } = await client.call('turn.start', { threadId, input: { text: 'go' } });
        await sleep(index * 25);
        await client.call('turn.interrupt', { threadId, turnId }).catch((error: { code?: string }) => {
          if (error.code !== 'illegal_transition') throw error;
        });
        sweep.push({ threadId, turnId });
      }
      for (const { threadId, turnId } of sweep) {
        await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 20_000 }).toBeOneOf(settledStates);
      }
      expect((await client.call('health', {})).status).toBe('ok');

      for (let index = 0; index < 50; index++) {
        const { threadId } = await client.call('thread.create', { title: `busy ${index}` });
        await client.call('turn.start', { threadId, input: { text: 'go' } });
      }
      await sleep(300);
    } finally {
      await bus.close();
    }
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output()).not.toMatch(/Unhandled|AbortError|    at /);

    const store = LmdbStore.open(join(dir.path, 'data'));
    try {
      expect([...store.threadsNewestFirst(null)].map(({ summary }) => summary)).toHaveLength(75);
      expect(store.openTurns()).toEqual([]);
    } finally {
      await store.close();
    }
  }, 120_000);
});
