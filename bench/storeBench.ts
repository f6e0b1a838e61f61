import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import type { DomainEvent, ThreadStore } from '../domain/index.ts';
import type { Command } from '../services/engine/commands.ts';
import { Engine } from '../services/engine/engine.ts';

/** The commands of one small agent turn on a fresh thread, as a client and a worker would send them. */
function turnCommands(threadId: string): Command[] {
  const turnId = `${threadId}-t`;
  const id = (n: number) => `${threadId}-c${n}`;
  const rec = (n: number, events: DomainEvent[]): Command => ({ type: 'turn.record', commandId: id(n), threadId, turnId, events });
  const usage = { input: 100, output: 20, reasoning: 0, cacheRead: 0, cacheWrite: 0 };
  return [
    { type: 'thread.create', commandId: id(0), threadId, title: 'bench', workspace: null, owner: null },
    { type: 'turn.start', commandId: id(1), threadId, turnId, input: { text: 'fix the race' }, provider: { name: 'scripted', model: null } },
    rec(2, [{ type: 'session.started', providerSessionId: null }, { type: 'turn.started', turnId }, { type: 'step.started', turnId, step: 1, digest: null }]),
    rec(3, [
      { type: 'part.started', turnId, partId: `${turnId}-p1`, step: 1, kind: 'text' },
      { type: 'part.delta', turnId, partId: `${turnId}-p1`, text: 'Let me run the tests. '.repeat(20) },
      { type: 'part.completed', turnId, partId: `${turnId}-p1`, signature: null },
      { type: 'part.started', turnId, partId: `${turnId}-p2`, step: 1, kind: 'tool', toolCallId: `${turnId}-call`, toolName: 'bash' },
      { type: 'tool.inputReady', turnId, partId: `${turnId}-p2`, toolCallId: `${turnId}-call`, input: { cmd: 'npm test' } },
      { type: 'response.completed', turnId, step: 1, stopReason: 'toolCalls', rawReason: 'tool_use' },
      { type: 'tools.started', turnId, step: 1, toolCallIds: [`${turnId}-call`] },
    ]),
    rec(4, [{ type: 'tool.executing', turnId, partId: `${turnId}-p2`, toolCallId: `${turnId}-call` }]),
    rec(5, [
      { type: 'tool.result', turnId, partId: `${turnId}-p2`, toolCallId: `${turnId}-call`, output: 'ok '.repeat(200) },
      { type: 'step.finished', turnId, step: 1, outcome: 'toolCalls', finishReason: 'tool_calls', usage, error: null },
      { type: 'step.started', turnId, step: 2, digest: null },
    ]),
    rec(6, [
      { type: 'part.started', turnId, partId: `${turnId}-p3`, step: 2, kind: 'text' },
      { type: 'part.delta', turnId, partId: `${turnId}-p3`, text: 'All green.' },
      { type: 'part.completed', turnId, partId: `${turnId}-p3`, signature: null },
      { type: 'step.finished', turnId, step: 2, outcome: 'stop', finishReason: 'stop', usage, error: null },
      { type: 'turn.completed', turnId, stopReason: 'stop' },
    ]),
  ];
}

/** Durable commands per second: `clients` concurrent clients, each driving `threadsPerClient` turns one after another. */
async function measure(open: (dir: string) => ThreadStore, clients: number, threadsPerClient: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'turnloom-bench-'));
  const engine = await Engine.open({ store: open(dir) });
  let commands = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; n < threadsPerClient; n++) {
        for (const command of turnCommands(`c${client}-th${n}`)) {
          await engine.submit(command);
          commands += 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1_000;
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
  return commands / seconds;
}

const median = (values: number[]) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function storeBench(): Promise<void> {
  const { SqliteStore } = await import('./sqliteStore.ts');
  const backends: Array<[string, (dir: string) => ThreadStore]> = [
    ['LMDB', (dir) => LmdbStore.open(dir)],
    ['SQLite WAL synchronous=FULL', (dir) => new SqliteStore(join(dir, 'turnloom.sqlite'))],
  ];
  console.log('store: durable commands per second through the engine, same workload, same run (median of 3, runs interleaved)');
  console.log('workload: one agent turn per thread = 7 commands (create, start, 5 worker records), every command one transaction\n');
  console.log(['clients', ...backends.map(([name]) => `${name} cmd/s`), 'LMDB / SQLite'].join(' | '));
  for (const clients of [1, 8, 32]) {
    const threadsPerClient = Math.max(4, Math.round(160 / clients));
    const samples = new Map<string, number[]>(backends.map(([name]) => [name, []]));
    for (let round = 0; round < 3; round++) {
      for (const [name, open] of backends) samples.get(name)!.push(await measure(open, clients, threadsPerClient));
    }
    const [lmdb, sqlite] = backends.map(([name]) => median(samples.get(name)!));
    console.log([String(clients), lmdb!.toFixed(0), sqlite!.toFixed(0), `${(lmdb! / sqlite!).toFixed(2)}x`].join(' | '));
  }
}
