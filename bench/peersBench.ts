import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBenchDependencies, installedVersion } from './benchDependencies.ts';
import { type Figure, type Suite, compared, inRounds, median } from './figure.ts';
import { contenders } from './peers/contenders.ts';
import { ANSWER_CHARS, type Contender, FIRST_TEXT, KILL_AT_CHARS, KILL_CHUNK_DELAY_MS, KILL_TOOL_MS, type Recovery, type Session, timedWorkload } from './peers/workload.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const childScript = fileURLToPath(new URL('./peers/child.ts', import.meta.url));

type Key = Contender['key'];
type PerContender = Record<Key, number>;

const keys = contenders.map((contender) => contender.key);
const shortName: Record<Key, string> = { turnloom: 'turnloom', langgraphFull: 'LangGraph FULL', langgraph: 'LangGraph default', agents: 'Agents SDK' };
const COMPARISON = { key: 'langgraphFull', label: 'LangGraph, SQLite sync FULL' } as const;
const PEERS = ['@langchain/langgraph', '@langchain/langgraph-checkpoint-sqlite', '@langchain/core', '@openai/agents', 'better-sqlite3'];

const sizesFor = (smoke: boolean) =>
  smoke
    ? { rounds: 1, sequentialTurns: 2, inFlight: 5, concurrentTurns: 10, concurrentRounds: 1, growthTurns: 5, growthWindow: 2, syncTurns: 2 }
    : { rounds: 5, sequentialTurns: 20, inFlight: 50, concurrentTurns: 200, concurrentRounds: 2, growthTurns: 200, growthWindow: 10, syncTurns: 50 };
type Sizes = ReturnType<typeof sizesFor>;

/** Every contender's value, turnloom first: what each figure's note names. */
const everyone = (values: PerContender, format: (value: number) => string) => (['turnloom', 'langgraphFull', 'langgraph', 'agents'] as const).map((key) => `${shortName[key]} ${format(values[key])}`).join(', ');
const fixed = (digits: number, unit = '') => (value: number) => `${Number.isFinite(value) ? value.toFixed(digits) : 'n/a'}${unit}`;
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const perKey = (compute: (key: Key) => number): PerContender => Object.fromEntries(keys.map((key) => [key, compute(key)])) as PerContender;

/** A figure of turnloom's value beside LangGraph with FULL sync, naming every contender's value in its note. */
function figure(values: PerContender, fields: Omit<Parameters<typeof compared>[0], 'value' | 'comparison'>, smoke: boolean): Figure {
  return compared({ ...fields, value: values.turnloom, comparison: { label: COMPARISON.label, value: values[COMPARISON.key] } }, smoke);
}

// ---------------------------------------------------------------- in this process

/** Sequential turns, each on a new thread: mean wall and CPU (user + system, every thread of this process) per turn. */
async function sequentialTurns(session: Session, turns: number): Promise<{ wall: number; cpu: number }> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let n = 0; n < turns; n++) await session.turn(await session.newThread());
  const cpu = process.cpuUsage(cpuBefore);
  return { wall: (performance.now() - started) / turns, cpu: (cpu.user + cpu.system) / 1_000 / turns };
}

/** `total` turns on new threads, `inFlight` at a time: turns per second. */
async function concurrentTurns(session: Session, inFlight: number, total: number): Promise<number> {
  let started = 0;
  const lane = async () => {
    while (started < total) {
      started += 1;
      await session.turn(await session.newThread());
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: inFlight }, lane));
  return total / ((performance.now() - began) / 1_000);
}

/** Turn after turn on one thread per contender, the contenders taking turns: each turn's wall time. */
async function growingThreads(sessions: Record<Key, Session>, turns: number): Promise<Record<Key, number[]>> {
  const threads = Object.fromEntries(await Promise.all(keys.map(async (key) => [key, await sessions[key].newThread()] as const))) as Record<Key, string>;
  return inRounds(turns, keys, async (key) => {
    const started = performance.now();
    await sessions[key].turn(threads[key]);
    return performance.now() - started;
  });
}

async function inProcessFigures(scratch: string, sizes: Sizes, smoke: boolean, emit: (figure: Figure) => void): Promise<void> {
  const sessions = {} as Record<Key, Session>;
  try {
    for (const contender of contenders) {
      const dir = join(scratch, `${contender.key}-timed`);
      mkdirSync(dir);
      sessions[contender.key] = await contender.open(dir, timedWorkload);
      // One turn each first: what loads lazily (modules, prepared statements, the worker) is not a round's cost.
      await sessions[contender.key].turn(await sessions[contender.key].newThread());
    }
    const versions = PEERS.map((name) => `${name} ${installedVersion(name)}`).join(', ');
    const sequential = await inRounds(sizes.rounds, keys, (key) => sequentialTurns(sessions[key], sizes.sequentialTurns));
    const wall = perKey((key) => median(sequential[key].map((sample) => sample.wall)));
    const cpu = perKey((key) => median(sequential[key].map((sample) => sample.cpu)));
    const rounds = `median of ${sizes.rounds} interleaved rounds of ${sizes.sequentialTurns} sequential turns each`;
    emit(
      figure(
        wall,
        {
          key: 'peersTurnWall',
          title: 'one turn on a new thread, wall',
          unit: 'ms',
          target: { on: 'ratio', op: '<=', bound: 0.5 },
          note: `${everyone(wall, fixed(2, ' ms'))}; a turn: 2,000 characters in 100 chunks and one tool call, then 500 characters, each through its own model interface, answer checked; ${rounds}; turnloom embedded (in-process bus, LMDB, side work off), LangGraph streamMode 'messages', the Agents SDK run with stream: true; peers: ${versions}`,
        },
        smoke,
      ),
    );
    emit(figure(cpu, { key: 'peersTurnCpu', title: 'one turn on a new thread, CPU', unit: 'ms', target: null, note: `${everyone(cpu, fixed(2, ' ms'))}; user + system CPU of the whole process (every thread) per turn; ${rounds}` }, smoke));

    const concurrent = await inRounds(sizes.concurrentRounds, keys, (key) => concurrentTurns(sessions[key], sizes.inFlight, sizes.concurrentTurns));
    const throughput = perKey((key) => median(concurrent[key]));
    emit(
      figure(
        throughput,
        {
          key: 'peersThroughput50',
          title: `turns/s, ${sizes.inFlight} in flight`,
          unit: 'turns/s',
          target: { on: 'ratio', op: '>=', bound: 2 },
          note: `${everyone(throughput, fixed(0, ' turns/s'))}; ${sizes.concurrentTurns} one-turn threads, ${sizes.inFlight} at once, in one process; median of ${sizes.concurrentRounds} interleaved rounds; LangGraph with LANGCHAIN_CALLBACKS_BACKGROUND=false, without which its messages stream lost most of each answer with turns in flight`,
        },
        smoke,
      ),
    );

    const growing = await growingThreads(sessions, sizes.growthTurns);
    const window = sizes.growthWindow;
    const first = perKey((key) => mean(growing[key].slice(0, window)));
    const last = perKey((key) => mean(growing[key].slice(-window)));
    const growth = perKey((key) => last[key] / first[key]);
    emit(
      figure(
        growth,
        {
          key: 'peersGrowth200',
          title: `turn cost, turn ${sizes.growthTurns} ÷ turn 1`,
          unit: '×',
          target: { on: 'value', op: '<=', bound: 2.5 },
          note: `${everyone(growth, fixed(2, '×'))}; ${sizes.growthTurns} turns on one thread per contender (the contenders taking turns), mean wall of the last ${window} ÷ the first ${window}: ${everyone(first, fixed(1, ' ms'))} → ${everyone(last, fixed(1, ' ms'))}`,
        },
        smoke,
      ),
    );
  } finally {
    for (const session of Object.values(sessions)) await session.close();
  }
}

// ---------------------------------------------------------------- in child processes

const straceAvailable = () => spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;

/**
 * Runs bench/peers/child.ts with `args`, under `strace -c` (its summary in
 * `straceTo`) when asked. `onLine` hears each line it says, with a way to
 * kill -9 it; a child killed that way is not a failure.
 */
function runChild(args: string[], options: { straceTo?: string; onLine?: (line: string, kill: () => void) => void } = {}): Promise<{ lines: string[]; killed: boolean }> {
  const node = [process.execPath, '--import', 'tsx', childScript, ...args];
  const [command, ...argv] = options.straceTo ? ['strace', '-f', '-c', '-e', 'trace=fsync,fdatasync', '-o', options.straceTo, ...node] : node;
  return new Promise((resolve, reject) => {
    const child = spawn(command!, argv, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let killed = false;
    let partial = '';
    let stderr = '';
    const kill = () => {
      killed = true;
      child.kill('SIGKILL');
    };
    child.stdout.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString('utf8');
      const complete = text.split('\n');
      partial = complete.pop()!;
      for (const line of complete) {
        lines.push(line);
        if (!killed) options.onLine?.(line, kill);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4_000)));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (killed || code === 0) resolve({ lines, killed });
      else reject(new Error(`bench/peers/child.ts ${args.join(' ')} ended with ${code ?? signal}: ${stderr}`));
    });
  });
}

/** fsync + fdatasync calls in an `strace -c` summary. */
function syncCalls(summaryPath: string): number {
  let calls = 0;
  for (const line of readFileSync(summaryPath, 'utf8').split('\n')) {
    const columns = line.trim().split(/\s+/);
    if (columns.length >= 5 && (columns.at(-1) === 'fsync' || columns.at(-1) === 'fdatasync')) calls += Number(columns[3]);
  }
  return calls;
}

/** K one-turn threads in a child beside none, on fresh folders: syncs and data bytes per turn (what K adds, over K). */
async function syncsAndBytes(scratch: string, contender: Contender, turns: number, strace: boolean): Promise<{ syncs: number; bytes: number }> {
  const measure = async (count: number) => {
    const dir = join(scratch, `${contender.key}-sync-${count}`);
    mkdirSync(dir);
    const straceTo = strace ? join(scratch, `${contender.key}-strace-${count}.txt`) : undefined;
    const { lines } = await runChild(['turns', contender.key, dir, String(count)], straceTo ? { straceTo } : {});
    return { syncs: straceTo ? syncCalls(straceTo) : Number.NaN, bytes: (JSON.parse(lines.at(-1)!) as { bytes: number }).bytes };
  };
  const none = await measure(0);
  const some = await measure(turns);
  return { syncs: (some.syncs - none.syncs) / turns, bytes: (some.bytes - none.bytes) / turns };
}

interface KillOutcome extends Recovery {
  toolRuns: number;
  /** Characters the first step had streamed when it was killed (the stream phase). */
  streamedAtKill: number;
}

/** A turn killed -9 (while its tool runs, or in the middle of its first step’s stream), then carried on by a new process on the same data. */
async function killAndRecover(scratch: string, contender: Contender, phase: 'tool' | 'stream'): Promise<KillOutcome> {
  const dir = join(scratch, `${contender.key}-kill-${phase}`);
  mkdirSync(dir);
  const toolLog = join(scratch, `${contender.key}-kill-${phase}.log`);
  let thread: string | null = null;
  let streamedAtKill = 0;
  const { killed } = await runChild(['kill', contender.key, dir, toolLog, phase], {
    onLine: (line, kill) => {
      const [word, value] = line.split(' ');
      if (word === 'thread') thread = value!;
      else if (phase === 'tool' && word === 'tool') kill();
      else if (phase === 'stream' && word === 'streamed' && Number(value) >= KILL_AT_CHARS) {
        streamedAtKill = Number(value);
        kill();
      }
    },
  });
  if (!killed || thread === null) throw new Error(`${contender.label}: the kill test's turn ended before it could be killed (${phase})`);
  const { lines } = await runChild(['recover', contender.key, dir, toolLog, thread]);
  const recovery = JSON.parse(lines.at(-1)!) as Recovery;
  const toolRuns = existsSync(toolLog) ? readFileSync(toolLog, 'utf8').split('\n').filter(Boolean).length : 0;
  return { ...recovery, toolRuns, streamedAtKill };
}

async function childFigures(scratch: string, sizes: Sizes, smoke: boolean, emit: (figure: Figure) => void): Promise<void> {
  const strace = straceAvailable();
  const measured = {} as Record<Key, { syncs: number; bytes: number }>;
  for (const contender of contenders) measured[contender.key] = await syncsAndBytes(scratch, contender, sizes.syncTurns, strace);
  const syncs = perKey((key) => measured[key].syncs);
  const bytes = perKey((key) => measured[key].bytes);
  const how = `each contender in a child process on a fresh folder doing ${sizes.syncTurns} one-turn threads, minus the same doing none, over ${sizes.syncTurns}`;
  if (strace)
    emit(
      figure(
        syncs,
        {
          key: 'peersFsyncs',
          title: 'fsync + fdatasync per turn',
          unit: 'syncs',
          target: { on: 'value', op: '<=', bound: 6 },
          note: `${everyone(syncs, fixed(1))}; strace -f -c -e trace=fsync,fdatasync, ${how}; LangGraph default is better-sqlite3's WAL default, synchronous=NORMAL`,
        },
        smoke,
      ),
    );
  else {
    emit({ key: 'peersFsyncs', title: 'fsync + fdatasync per turn', value: Number.NaN, unit: 'syncs', comparison: null, ratio: null, target: { on: 'value', op: '<=', bound: 6 }, meetsTarget: null, note: 'missing: strace is not on the PATH here' });
  }
  emit(
    figure(
      bytes,
      {
        key: 'peersBytes',
        title: 'bytes per one-turn thread',
        unit: 'B',
        target: { on: 'value', op: '<=', bound: 12_288 },
        note: `${everyone(bytes, (value) => `${(value / 1_024).toFixed(1)} KiB`)}; file sizes once closed (turnloom: the LMDB folder; LangGraph: its SQLite file, WAL checkpointed in on close; the Agents SDK keeps nothing), ${how}; target 12 KiB = 12,288 bytes`,
      },
      smoke,
    ),
  );

  // LangGraph's default sync is left out: a killed process loses nothing the kernel already has, whatever the fsyncs.
  const killed = ['turnloom', 'langgraphFull', 'agents'] as const;
  const outcomes = {} as Record<(typeof killed)[number], Record<'tool' | 'stream', KillOutcome>>;
  for (const contender of contenders.filter((contender) => contender.key !== 'langgraph')) {
    outcomes[contender.key as (typeof killed)[number]] = { tool: await killAndRecover(scratch, contender, 'tool'), stream: await killAndRecover(scratch, contender, 'stream') };
  }
  const told = (phase: 'tool' | 'stream', say: (outcome: KillOutcome) => string) => killed.map((key) => `${shortName[key]}: ${say(outcomes[key][phase])}`).join('; ');
  const killFigure = (phase: 'tool' | 'stream', value: (outcome: KillOutcome) => number, fields: Pick<Figure, 'key' | 'title' | 'unit' | 'note'>) =>
    compared({ ...fields, value: value(outcomes.turnloom[phase]), comparison: { label: COMPARISON.label, value: value(outcomes.langgraphFull[phase]) }, target: null }, smoke);
  emit(
    killFigure('tool', (outcome) => outcome.toolRuns, {
      key: 'peersKillTool',
      title: 'kill -9 during the tool: tool runs',
      unit: 'runs',
      note: `kill -9 while the tool (${KILL_TOOL_MS} ms, one line in a file per run) runs, then a new process opens the same data and carries on as its users would — ${told('tool', (outcome) => `${outcome.toolRuns} run${outcome.toolRuns === 1 ? '' : 's'}, ${outcome.outcome}`)}`,
    }),
  );
  emit(
    killFigure('stream', (outcome) => outcome.keptChars, {
      key: 'peersKillStream',
      title: 'kill -9 mid-stream: characters kept',
      unit: 'chars',
      note: `kill -9 once the first step had streamed ${KILL_AT_CHARS} of its ${FIRST_TEXT.length} characters (a chunk every ${KILL_CHUNK_DELAY_MS} ms; turnloom writes a streaming answer about once a second, the live channel carrying the typing), then a new process carries on — ${told('stream', (outcome) => `${outcome.keptChars} of ≥${outcome.streamedAtKill} kept, tool ran ${outcome.toolRuns}×, ${outcome.outcome}`)}; a whole answer is ${ANSWER_CHARS}; turnloom's scripted model answers by step number, so its turn, taken up after the closed first step, goes on with the second`,
    }),
  );
}

/**
 * `npm run bench -- peers`: one agent turn through turnloom embedded, LangGraph.js
 * (SqliteSaver, default and synchronous=FULL) and the OpenAI Agents SDK, each
 * with a fake model through its own model interface, in one run, interleaved;
 * every figure is turnloom's beside LangGraph with FULL sync.
 */
export const peersSuite: Suite = {
  name: 'peers',
  async run({ smoke, onFigure }) {
    await ensureBenchDependencies();
    const sizes = sizesFor(smoke);
    const figures: Figure[] = [];
    const emit = (figure: Figure) => {
      figures.push(figure);
      onFigure?.(figure);
    };
    const scratch = mkdtempSync(join(tmpdir(), 'turnloom-bench-peers-'));
    try {
      await inProcessFigures(scratch, sizes, smoke, emit);
      await childFigures(scratch, sizes, smoke, emit);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    return figures;
  },
};
