import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import type { DomainEvent, ThreadStore } from '../domain/index.ts';
import type { Command } from '../services/engine/commands.ts';
import { Engine } from '../services/engine/engine.ts';
import { ensureBenchDependencies } from './benchDependencies.ts';
import { type Figure, type Suite, compared, interleaved } from './figure.ts';

/** The commands of one small agent turn on a fresh thread, as a client and a worker would send them (7 commands). */
export function turnCommands(threadId: string): Command[] {
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

/** Runs `clients` concurrent clients on `engine`, each driving `threadsPerClient` turns one after another; resolves with the commands sent. */
export async function driveTurns(engine: Engine, clients: number, threadsPerClient: number, prefix = 'c'): Promise<number> {
  let commands = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; n < threadsPerClient; n++) {
        for (const command of turnCommands(`${prefix}${client}-th${n}`)) {
          await engine.submit(command);
          commands += 1;
        }
      }
    }),
  );
  return commands;
}

/** Durable commands per second on a fresh folder: every command is its own transaction, acknowledged once durable. */
async function commandsPerSecond(open: (dir: string) => ThreadStore, clients: number, threadsPerClient: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'turnloom-bench-store-'));
  try {
    const engine = await Engine.open({ store: open(dir) });
    try {
      const started = performance.now();
      const commands = await driveTurns(engine, clients, threadsPerClient);
      return commands / ((performance.now() - started) / 1_000);
    } finally {
      await engine.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function durableFigure(clients: number, target: number, smoke: boolean): Promise<Figure> {
  const { SqliteStore } = await import('./sqliteStore.ts');
  // Enough threads that one run takes seconds, not milliseconds; one each when smoking.
  const threadsPerClient = smoke ? 1 : Math.max(4, Math.round(160 / clients));
  const rounds = smoke ? 1 : 3;
  const { baseline, subject } = await interleaved(
    rounds,
    () => commandsPerSecond((dir) => new SqliteStore(join(dir, 'turnloom.sqlite')), clients, threadsPerClient),
    () => commandsPerSecond((dir) => LmdbStore.open(dir), clients, threadsPerClient),
  );
  return compared(
    {
      key: `durable${clients}`,
      title: `durable commands/s, ${clients} client${clients === 1 ? '' : 's'}, LMDB`,
      unit: 'cmd/s',
      value: subject,
      comparison: { label: 'SQLite WAL, sync FULL', value: baseline },
      target: { on: 'ratio', op: '>=', bound: target },
      note: `the same engine on SQLite (WAL, synchronous=FULL) as comparison; ${clients}×${threadsPerClient} threads of one 7-command agent turn, one transaction per command; median of ${rounds} interleaved rounds`,
    },
    smoke,
  );
}

/** `npm run bench -- store`: the engine's durable throughput on LMDB beside the same engine on SQLite. */
export const storeSuite: Suite = {
  name: 'store',
  async run({ smoke, onFigure }: { smoke: boolean; onFigure?: (figure: Figure) => void }) {
    await ensureBenchDependencies();
    const figures: Figure[] = [];
    for (const [clients, target] of [
      [1, 1],
      [32, 3],
    ] as const) {
      const figure = await durableFigure(clients, target, smoke);
      onFigure?.(figure);
      figures.push(figure);
    }
    return figures;
  },
};
