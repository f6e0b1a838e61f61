import { createHash } from 'node:crypto';
import { open } from 'lmdb';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { Subjects } from '../../bus/index.ts';
import type { DomainEvent, Receipt } from '../../domain/index.ts';
import type { Command } from '../../services/engine/commands.ts';
import { Engine, type EngineOptions } from '../../services/engine/engine.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { tempDir } from './tempDir.ts';

export interface EngineFixture {
  dir: string;
  engine: Engine;
  store: LmdbStore;
  /** Closes the engine and opens a new one on the same folder (repair runs again). */
  restart(options?: Partial<EngineOptions>): Promise<Engine>;
  dispose(): Promise<void>;
}

export async function openEngineFixture(options: Partial<EngineOptions> = {}): Promise<EngineFixture> {
  const dir = tempDir('turnloom-engine-');
  const fixture: EngineFixture = {
    dir: dir.path,
    store: LmdbStore.open(dir.path),
    engine: undefined as unknown as Engine,
    restart: async (next = {}) => {
      await fixture.engine.close();
      fixture.store = LmdbStore.open(dir.path);
      fixture.engine = await Engine.open({ ...options, ...next, store: fixture.store });
      return fixture.engine;
    },
    dispose: async () => {
      await fixture.engine.close();
      dir.remove();
    },
  };
  fixture.engine = await Engine.open({ ...options, store: fixture.store });
  return fixture;
}

/** Every receipt in a store folder, read straight from the documented keyspace. */
export async function readAllReceipts(dir: string): Promise<Receipt[]> {
  const env = open({ path: dir, maxDbs: 16, readOnly: true });
  const receipts = [...env.openDB<Receipt, string>({ name: 'receipts' }).getRange({}).map(({ value }) => value)];
  await env.close();
  return receipts;
}

let counter = 0;
export const nextId = (prefix: string) => `${prefix}${++counter}`;

export const createThread = (threadId: string, title = 'a thread'): Extract<Command, { type: 'thread.create' }> => ({
  type: 'thread.create',
  commandId: nextId('cmd-'),
  threadId,
  title,
  workspace: null,
  owner: null,
});

export const startTurn = (threadId: string, turnId: string, text = 'fix the race'): Extract<Command, { type: 'turn.start' }> => ({
  type: 'turn.start',
  commandId: nextId('cmd-'),
  threadId,
  turnId,
  input: { text },
  provider: { name: 'scripted', model: null },
});

export const record = (threadId: string, turnId: string, events: DomainEvent[]): Command => ({
  type: 'turn.record',
  commandId: nextId('cmd-'),
  threadId,
  turnId,
  events,
});

/**
 * Leases a waiting turn the way a worker's claim does, for tests that play
 * the worker by hand; answers the subject that lease's live deltas go on
 * (nothing else on the thread's live subjects reaches its watchers).
 */
export async function leaseByHand(engine: Engine, subjects: Subjects, threadId: string, turnId: string): Promise<string> {
  const keyHash = createHash('sha256').update(`the key of ${threadId}/${turnId}`).digest('hex');
  await engine.submit({ type: 'turn.lease', commandId: nextId('lease-'), threadId, turnId, workerId: 'by-hand', keyHash });
  return subjects.live(engine.summary(threadId)!.environment, threadId, keyHash);
}

/** Builders for a worker's events, so tests read like the turn they describe. */
export function turnEvents(turnId: string) {
  return {
    sessionStarted: (): DomainEvent => ({ type: 'session.started', providerSessionId: `ps-${turnId}` }),
    started: (): DomainEvent => ({ type: 'turn.started', turnId }),
    step: (step: number): DomainEvent => ({ type: 'step.started', turnId, step, digest: null }),
    text: (partId: string, step: number, ...chunks: string[]): DomainEvent[] => [
      { type: 'part.started', turnId, partId, step, kind: 'text' },
      ...chunks.map((text): DomainEvent => ({ type: 'part.delta', turnId, partId, text })),
      { type: 'part.completed', turnId, partId, signature: null },
    ],
    toolCall: (partId: string, step: number, toolCallId: string, input: unknown): DomainEvent[] => [
      { type: 'part.started', turnId, partId, step, kind: 'tool', toolCallId, toolName: 'bash' },
      { type: 'tool.inputDelta', turnId, partId, text: JSON.stringify(input) },
      { type: 'tool.inputReady', turnId, partId, toolCallId, input },
    ],
    responded: (step: number, stopReason = 'toolCalls'): DomainEvent => ({ type: 'response.completed', turnId, step, stopReason, rawReason: null }),
    /** The answer ended asking for these tools: response.completed then tools.started. */
    toolsStarted: (step: number, toolCallIds: string[]): DomainEvent[] => [
      { type: 'response.completed', turnId, step, stopReason: 'toolCalls', rawReason: 'tool_use' },
      { type: 'tools.started', turnId, step, toolCallIds },
    ],
    executing: (partId: string, toolCallId: string): DomainEvent => ({ type: 'tool.executing', turnId, partId, toolCallId }),
    result: (partId: string, toolCallId: string, output: string): DomainEvent => ({ type: 'tool.result', turnId, partId, toolCallId, output }),
    approvalRequested: (approvalId: string, partId: string, toolCallId: string): DomainEvent => ({
      type: 'approval.requested',
      turnId,
      approvalId,
      partId,
      toolCallId,
      toolName: 'bash',
      input: { cmd: 'rm -rf build' },
      kind: 'command',
      subject: 'rm -rf build',
    }),
    stepFinished: (step: number, outcome: 'stop' | 'toolCalls' = 'stop'): DomainEvent => ({
      type: 'step.finished',
      turnId,
      step,
      outcome,
      finishReason: outcome === 'stop' ? 'stop' : 'tool_calls',
      usage: { input: 10, output: 5, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
      error: null,
    }),
    completed: (): DomainEvent => ({ type: 'turn.completed', turnId, stopReason: 'stop' }),
  };
}

/** The stored read model of a thread must equal a fold of its log. */
export function rebuildFromLog(store: LmdbStore, threadId: string) {
  return rebuildView(threadId, store.readThreadEvents(threadId, 0, Number.MAX_SAFE_INTEGER));
}
