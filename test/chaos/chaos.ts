import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { NatsBus } from '../../bus/natsBus.ts';
import { type ThreadWatch, TurnloomClient } from '../../client/index.ts';
import type { StoredEvent, ThreadView } from '../../domain/index.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import { startNatsServer } from '../support/natsServer.ts';
import { startNatsCluster } from '../support/natsCluster.ts';
import { tempDir } from '../support/tempDir.ts';
import { prng } from '../support/prng.ts';

export interface ChaosOptions {
  turns: number;
  seconds: number;
  seed: number;
  /** Engines (more than one: a cluster, `serve --cluster`, its log in JetStream). Default 1. */
  engines?: number;
  /** nats-servers (more than one: a cluster of them, the log replicated on three). Default 1. */
  natsNodes?: number;
  /** Every turn delegates to a sub-agent, which delegates again; the third level's call is refused by the depth limit. Default false. */
  delegate?: boolean;
  /** Say what happens as it happens. */
  log?: (line: string) => void;
  /** A folder to write, for each stuck turn, its thread's events, and once, what every process started printed. */
  dumpDir?: string;
}

export interface ChaosReport {
  turns: number;
  seconds: number;
  seed: number;
  engines: number;
  natsNodes: number;
  kills: { worker: number; engine: number; nats: number };
  started: number;
  /** Sub-agent turns the started ones made (their threads' turns are checked like the others). */
  children: number;
  completed: number;
  failed: number;
  failures: Record<string, number>;
  interrupted: number;
  /** Not settled once every process was back and had time to finish. */
  stuck: number;
  /** Texts, tool results or events a client never got, or that the log lacks. */
  lost: number;
  /** Writes that landed twice in the log, or events a client applied twice. */
  duplicated: number;
  /** Turns that lost a worker and were resumed on another. */
  resumes: number;
  /** The longest any API request of the client waited for its answer, retries through outages and failovers included, in ms. */
  longestWaitMs: number;
}

const TEXT_A = 'Reading the code before touching anything, one careful chunk at a time. ';
const TEXT_B = 'The fix is in, and the tests pass again.';
const SCRIPT = {
  chunkSize: 8,
  delayMs: 25,
  steps: [
    [{ text: TEXT_A.repeat(3) }, { toolCall: { name: 'run_tests', input: { cmd: 'npm test' }, approval: true, result: 'all green', durationMs: 200 } }],
    [{ text: TEXT_B }],
  ],
};
/** The same, with a sub-agent asked for after the tests (the sub-agent plays this script too). */
const DELEGATING_SCRIPT = {
  ...SCRIPT,
  steps: [[...SCRIPT.steps[0]!, { toolCall: { name: 'task', input: { agent: 'general', prompt: 'check the tests once more', description: 'second look' } } }], SCRIPT.steps[1]!],
};
const expectedTexts = new Set([TEXT_A.repeat(3), TEXT_B]);

/** The longest a request waited so far (retries included). */
let longestWaitMs = 0;

/** Retries a call through engine restarts, failovers and NATS outages, for a bounded time. */
async function persist<T>(call: () => Promise<T>, ms = 60_000): Promise<T> {
  const started = Date.now();
  for (const deadline = started + ms; ; ) {
    try {
      const answer = await call();
      longestWaitMs = Math.max(longestWaitMs, Date.now() - started);
      return answer;
    } catch (error) {
      if (Date.now() > deadline || (error as { code?: string }).code !== 'unavailable') throw error;
      await sleep(200);
    }
  }
}

async function wholeLog(client: TurnloomClient, threadId: string): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for (;;) {
    const page = await persist(() => client.call('thread.events', { threadId, after: events.at(-1)?.threadSeq ?? 0 }));
    events.push(...page.events);
    if (page.events.length === 0 || events.at(-1)!.threadSeq >= page.lastSeq) return events;
  }
}

/**
 * One engine (or a cluster of them), three workers and a nats-server (or a
 * cluster of them) as separate processes, turns with tool calls behind
 * approvals (answered by a client), and at random moments a kill -9 of a
 * worker, of an engine, or of a nats-server, each started again soon after.
 * Then everything comes back, and every turn must settle, every client view
 * must equal the engine's log, and the log must hold each scripted text
 * exactly once per completed part.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const random = prng(options.seed);
  const dir = tempDir('turnloom-chaos-');
  const engineCount = options.engines ?? 1;
  const clustered = engineCount > 1;
  const natsNodes = options.natsNodes ?? 1;
  longestWaitMs = 0;
  // A cluster's log lives in JetStream; one engine keeps it in LMDB and needs none.
  const nats = natsNodes > 1 ? await startNatsCluster(natsNodes) : await startNatsServer({ jetstream: clustered });
  const natsUrl = nats.url;
  const natsProcesses = 'nodes' in nats ? nats.nodes : [nats];
  const prefix = `chaos${options.seed}`;
  const scriptPath = join(dir.path, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(options.delegate ? DELEGATING_SCRIPT : SCRIPT));
  const kills = { worker: 0, engine: 0, nats: 0 };
  const started: Array<{ name: string; process: CliProcess }> = [];
  const track = (name: string, process: CliProcess) => {
    started.push({ name: `${name}-${started.length}`, process });
    return process;
  };
  const startEngine = (index: number) =>
    track(`engine${index + 1}`, runCli(['serve', '--nats', natsUrl, '--no-worker', '--prefix', prefix, '--data', join(dir.path, `data${index}`), '--lease-timeout', '3', '--approval-timeout', '600', ...(clustered ? ['--cluster'] : [])]));
  const startWorker = (id: string) => track(id, runCli(['worker', '--nats', natsUrl, '--workspace', dir.path, '--id', id, '--prefix', prefix, '--script', scriptPath]));
  const engines: CliProcess[] = [];
  for (let index = 0; index < engineCount; index++) {
    engines.push(startEngine(index));
    // Engines of a cluster join one after the other, each making sure of the stream and buckets first.
    if (clustered) await engines[index]!.waitFor('data:', 60_000);
  }
  const workers = new Map<string, CliProcess>(['w1', 'w2', 'w3'].map((id) => [id, startWorker(id)]));
  const bus = await NatsBus.connect({ servers: natsUrl.split(',') });
  const client = new TurnloomClient(bus, { prefix, timeoutMs: 5_000 });
  const watches: ThreadWatch[] = [];
  const turns: Array<{ threadId: string; turnId: string }> = [];
  let stopped = false;
  try {
    await Promise.all(engines.map((engine) => engine.waitFor('data:', 60_000)));
    await Promise.all([...workers.values()].map((worker) => worker.waitFor('environment default')));

    // The client: starts turns over the first half of the run, and answers every approval it sees.
    const starting = (async () => {
      for (let index = 0; index < options.turns; index++) {
        const { threadId } = await persist(() => client.call('thread.create', { commandId: `create-${index}`, title: `chaos ${index}` }));
        watches.push(await persist(() => client.watchThread(threadId, { pollMs: 1_000 })));
        const { turnId } = await persist(() => client.call('turn.start', { commandId: `start-${index}`, threadId, input: { text: `task ${index}` } }));
        turns.push({ threadId, turnId });
        await sleep((options.seconds * 500) / options.turns);
      }
    })();
    const approving = (async () => {
      while (!stopped) {
        try {
          for (const approval of (await client.call('approval.list', { limit: 1_000 })).approvals) {
            await client.call('approval.respond', { threadId: approval.threadId, approvalId: approval.id, decision: 'approve', commandId: `approve-${approval.threadId}-${approval.id}` });
          }
        } catch {
          // The engine or NATS is down for a moment: ask again soon.
        }
        await sleep(200);
      }
    })();

    // The chaos: a kill or a restart every 1.5–4 s, each process back after 0.3–1.5 s.
    for (const end = Date.now() + options.seconds * 1_000; Date.now() < end; ) {
      await sleep(1_500 + random() * 2_500);
      const pick = random();
      if (pick < 0.5) {
        const id = [...workers.keys()][Math.floor(random() * workers.size)]!;
        log(`kill -9 worker ${id}`);
        kills.worker += 1;
        await workers.get(id)!.kill('SIGKILL');
        await sleep(300 + random() * 1_200);
        workers.set(id, startWorker(id));
      } else if (pick < 0.8) {
        const index = Math.floor(random() * engines.length);
        log(`kill -9 engine ${index + 1}`);
        kills.engine += 1;
        await engines[index]!.kill('SIGKILL');
        await sleep(300 + random() * 1_200);
        engines[index] = startEngine(index);
      } else {
        const node = natsProcesses[Math.floor(random() * natsProcesses.length)]!;
        log(`kill -9 nats-server${natsProcesses.length > 1 ? ` ${'name' in node ? node.name : ''}` : ''}`);
        kills.nats += 1;
        await node.kill();
        await sleep(300 + random() * 1_200);
        await node.start();
      }
    }
    await starting;
    log('chaos over: every process back; waiting for the turns to settle');
    await Promise.all(engines.map((engine) => engine.waitFor('data:', 60_000)));
    const settledStates = ['completed', 'failed', 'interrupted'];
    const stateOf = async ({ threadId, turnId }: { threadId: string; turnId: string }) =>
      (await persist(() => client.call('thread.get', { threadId }))).thread.turns[turnId]?.state ?? 'absent';
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
      const states = await Promise.all(turns.map(stateOf));
      if (states.every((state) => settledStates.includes(state))) break;
      await sleep(500);
    }
    stopped = true;
    await approving;

    const report: ChaosReport = {
      turns: options.turns,
      seconds: options.seconds,
      seed: options.seed,
      engines: engineCount,
      natsNodes,
      kills,
      started: turns.length,
      children: 0,
      completed: 0,
      failed: 0,
      failures: {},
      interrupted: 0,
      stuck: 0,
      lost: 0,
      duplicated: 0,
      resumes: 0,
      longestWaitMs: 0,
    };
    /** Counts how a turn ended and whether its log holds what it should, once; then the same for each sub-agent it delegated to. */
    const check = async (threadId: string, turnId: string, child: boolean): Promise<ThreadView> => {
      const events = await wholeLog(client, threadId);
      if (events.some((event, position) => event.threadSeq !== position + 1)) report.lost += 1;
      const truth: ThreadView = rebuildView(threadId, events);
      const turn = truth.turns[turnId];
      if (child) report.children += 1;
      if (turn?.state === 'completed') report.completed += child ? 0 : 1;
      else if (turn?.state === 'interrupted') report.interrupted += child ? 0 : 1;
      else if (turn?.state === 'failed') {
        report.failed += child ? 0 : 1;
        const reason = (turn.error ?? 'unknown').replace(/\d+/g, 'N');
        report.failures[reason] = (report.failures[reason] ?? 0) + 1;
      } else {
        report.stuck += 1;
        if (options.dumpDir) {
          writeFileSync(join(options.dumpDir, `stuck-${threadId}.json`), JSON.stringify({ turnId, state: turn?.state, events }, null, 1));
          for (const { name, process } of started) writeFileSync(join(options.dumpDir, `${name}.log`), process.output());
        }
      }
      if (!turn) return truth;
      report.resumes += Math.max(0, turn.leases - 1);
      // The log holds each finished text exactly once: a longer one was written twice, a shorter one lost a piece.
      for (const part of turn.messages[1].parts) {
        if (part.kind !== 'text' || part.state !== 'completed') continue;
        if (expectedTexts.has(part.text)) continue;
        const twice = [...expectedTexts].some((text) => part.text.length > text.length && part.text.includes(text));
        if (twice) report.duplicated += 1;
        else report.lost += 1;
        log(`thread ${threadId}: part ${part.id} ${twice ? 'holds a text twice' : 'lost a piece of its text'}: ${JSON.stringify(part.text.slice(0, 80))}`);
      }
      // A delegated call got one child, and its result is that child's answer, once.
      for (const part of turn.messages[1].parts) {
        if (!part.task) continue;
        const answers = part.tool?.output?.split(TEXT_B).length ?? 0;
        if (part.task.status === 'completed' && answers !== 2) {
          if (answers > 2) report.duplicated += 1;
          else report.lost += 1;
          log(`thread ${threadId}: call ${part.id} got ${JSON.stringify(part.tool?.output?.slice(0, 120))} from its sub-agent`);
        }
        if (part.task.status === 'refused') continue;
        const child = await persist(() => client.call('thread.get', { threadId: part.task!.childThreadId })).catch(() => null);
        if (child) await check(child.thread.id, child.thread.turnIds[0] ?? '', true);
        else {
          // A delegated call whose child was never made waits for ever.
          report.stuck += 1;
          log(`thread ${threadId}: call ${part.id} delegated to ${part.task.childThreadId}, which does not exist`);
        }
      }
      return truth;
    };
    for (const [index, { threadId, turnId }] of turns.entries()) {
      const truth = await check(threadId, turnId, false);
      // Every client's view is the engine's log, folded.
      const watch = watches[index]!;
      await watch.reach(truth.seq).catch(() => undefined);
      await watch.settled();
      const seen = watch.context.view;
      const window = seen ? { ...truth, turnIds: seen.turnIds, turns: Object.fromEntries(seen.turnIds.map((id) => [id, truth.turns[id]!])) } : null;
      if (!seen || !isDeepStrictEqual(seen, window)) {
        if ((seen?.seq ?? 0) < truth.seq) report.lost += 1;
        else report.duplicated += 1;
        log(`thread ${threadId}: the client's view differs from the log (client seq ${seen?.seq}, log ${truth.seq})`);
      }
    }
    report.longestWaitMs = longestWaitMs;
    return report;
  } finally {
    stopped = true;
    for (const watch of watches) watch.close();
    await bus.close().catch(() => undefined);
    await Promise.all([...engines, ...workers.values()].map((process) => process.kill('SIGKILL')));
    await nats.dispose();
    dir.remove();
  }
}
