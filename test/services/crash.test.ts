import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { StoredEvent } from '../../domain/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { CrashRepair } from '../../services/runtime/crashRepair.ts';
import { readAllReceipts } from '../support/engineFixture.ts';
import { spawnEngineChild } from '../support/spawnChild.ts';
import { tempDir } from '../support/tempDir.ts';

interface Ack {
  commandId: string;
  threadId: string;
  from: number;
  to: number;
}

const KILLS = 24;

/** Everything a killed process must have left consistent. */
async function verifyStore(dir: string, acked: Ack[]): Promise<{ events: number; threads: number }> {
  const store = LmdbStore.open(dir);
  const log: StoredEvent[] = store.readLog(0, Number.MAX_SAFE_INTEGER);
  const threads = [...store.threadsNewestFirst(null)].map(({ summary }) => summary);
  const views = threads.map(({ id }) => ({ id, stored: store.readView(id), rebuilt: rebuildView(id, store.readThreadEvents(id, 0, Number.MAX_SAFE_INTEGER)) }));
  await store.close();
  const receipts = new Map((await readAllReceipts(dir)).map((receipt) => [receipt.commandId, receipt]));

  // The global log is contiguous from 1.
  expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index + 1));

  // Each thread's sequence is contiguous from 1, and each command's events form one run.
  const byThread = new Map<string, StoredEvent[]>();
  for (const event of log) byThread.set(event.threadId, [...(byThread.get(event.threadId) ?? []), event]);
  const ranges = new Map<string, { threadId: string; from: number; to: number }>();
  for (const [threadId, events] of byThread) {
    expect(events.map((event) => event.threadSeq)).toEqual(events.map((_, index) => index + 1));
    for (const event of events) {
      const range = ranges.get(event.commandId);
      if (range) {
        expect(event.threadSeq, `command ${event.commandId} is split`).toBe(range.to + 1);
        range.to = event.threadSeq;
      } else {
        ranges.set(event.commandId, { threadId, from: event.threadSeq, to: event.threadSeq });
      }
    }
  }

  // No half-written command: events without a receipt, or a receipt without its events.
  for (const [commandId, range] of ranges) {
    expect(receipts.get(commandId), `events of ${commandId} have no receipt`).toMatchObject({ outcome: 'accepted', fromThreadSeq: range.from, toThreadSeq: range.to });
  }
  for (const receipt of receipts.values()) {
    if (receipt.outcome !== 'accepted' || receipt.toThreadSeq < receipt.fromThreadSeq) continue;
    expect(ranges.get(receipt.commandId), `receipt ${receipt.commandId} has no events`).toEqual({
      threadId: receipt.threadId,
      from: receipt.fromThreadSeq,
      to: receipt.toThreadSeq,
    });
  }

  // Every acknowledged command is there, exactly once.
  for (const ack of acked) {
    expect(ranges.get(ack.commandId), `acknowledged ${ack.commandId} is missing`).toEqual({ threadId: ack.threadId, from: ack.from, to: ack.to });
  }

  // The projection is the fold of the log.
  for (const { id, stored, rebuilt } of views) expect(stored, `projection of ${id}`).toEqual(rebuilt);
  return { events: log.length, threads: threads.length };
}

describe('crash test: SIGKILL at random moments', () => {
  const dir = tempDir('turnloom-crash-');
  afterAll(() => dir.remove());

  it(`keeps the log, receipts and projections consistent across ${KILLS} kills`, async () => {
    const acked: Ack[] = [];
    let stats = { events: 0, threads: 0 };
    for (let kill = 0; kill < KILLS; kill++) {
      const child = spawnEngineChild(['loop', dir.path, String(1_000 + kill)]);
      await child.ready;
      await sleep(20 + Math.floor(Math.random() * 250));
      await child.kill();
      acked.push(...(child.lines as Ack[]));
      stats = await verifyStore(dir.path, acked);
    }
    // Not vacuous: the children did real work between kills.
    expect(acked.length).toBeGreaterThan(KILLS * 5);
    expect(stats.events).toBeGreaterThan(acked.length);
    console.log(`crash test: ${KILLS} kills, ${acked.length} acknowledged commands, ${stats.events} events in ${stats.threads} threads`);

    // After the last kill a restart repairs every started turn left open.
    const store = LmdbStore.open(dir.path);
    const engine = await Engine.open({ store });
    await new CrashRepair(engine).run();
    // What is left open waits for a worker, with no step half-done: not started, or between steps.
    for (const { threadId, turnId } of store.openTurns()) {
      const view = await engine.getThread(threadId);
      expect(['requested', 'running.betweenSteps']).toContain(view.turns[turnId]!.state);
      expect(view.cursor.openStep).toBeNull();
    }
    await engine.close();
    await verifyStore(dir.path, acked);
  }, 300_000);
});
