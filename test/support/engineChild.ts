/**
 * A process that owns an engine and is meant to be killed with SIGKILL.
 * `repair-scenario <dir>`: leaves turns open mid-step, prints READY, waits.
 * `loop <dir> <seed>`: submits commands forever, printing one JSON line per
 * acknowledged command.
 */
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { Command } from '../../services/engine/commands.ts';
import type { DomainEvent } from '../../domain/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { turnEvents } from './engineFixture.ts';
import { prng } from './prng.ts';

const [mode, dir, seedText] = process.argv.slice(2);
const engine = await Engine.open({ store: LmdbStore.open(dir!) });
const print = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function repairScenario(): Promise<void> {
  const t = turnEvents('t1');
  type WithoutId<C> = C extends unknown ? Omit<C, 'commandId'> : never;
  const send = (command: WithoutId<Command>, id: string) => engine.submit({ ...command, commandId: id } as Command);
  await send({ type: 'thread.create', threadId: 'th1', title: 'repair me', workspace: null, owner: null }, 'c1');
  await send({ type: 'turn.start', threadId: 'th1', turnId: 't1', input: { text: 'run it' }, provider: { name: 'scripted', model: null } }, 'c2');
  await send(
    {
      type: 'turn.record',
      threadId: 'th1',
      turnId: 't1',
      events: [
        t.sessionStarted(),
        t.started(),
        t.step(1),
        ...t.text('p1', 1, 'Running two commands.'),
        ...t.toolCall('p2', 1, 'call-ready', { cmd: 'make deploy' }),
        // The answer is still streaming: this call's input is not complete.
        { type: 'part.started', turnId: 't1', partId: 'p3', step: 1, kind: 'tool', toolCallId: 'call-streaming', toolName: 'bash' },
        { type: 'tool.inputDelta', turnId: 't1', partId: 'p3', text: '{"cmd": "rm -' },
      ],
    },
    'c3',
  );
  // A third thread whose only call was running: nothing is left to resume, and its outcome is unknown.
  const v = turnEvents('t3');
  await send({ type: 'thread.create', threadId: 'th3', title: 'running', workspace: null, owner: null }, 'c7');
  await send({ type: 'turn.start', threadId: 'th3', turnId: 't3', input: { text: 'deploy' }, provider: { name: 'scripted', model: null } }, 'c8');
  await send(
    {
      type: 'turn.record',
      threadId: 'th3',
      turnId: 't3',
      events: [v.sessionStarted(), v.started(), v.step(1), ...v.toolCall('r1', 1, 'call-running', { cmd: 'make deploy' }), ...v.toolsStarted(1, ['call-running']), v.executing('r1', 'call-running')],
    },
    'c9',
  );
  // A second thread with a turn waiting on an approval: its step can be resumed by a worker, so repair leaves it.
  const u = turnEvents('t9');
  await send({ type: 'thread.create', threadId: 'th2', title: 'approval', workspace: null, owner: null }, 'c4');
  await send({ type: 'turn.start', threadId: 'th2', turnId: 't9', input: { text: 'clean up' }, provider: { name: 'scripted', model: null } }, 'c5');
  await send(
    {
      type: 'turn.record',
      threadId: 'th2',
      turnId: 't9',
      events: [u.sessionStarted(), u.started(), u.step(1), ...u.toolCall('q1', 1, 'call-q', {}), ...u.toolsStarted(1, ['call-q']), u.approvalRequested('ap1', 'q1', 'call-q')],
    },
    'c6',
  );
  print('READY');
}

async function loop(seed: number): Promise<void> {
  const random = prng(seed);
  let n = 0;
  const id = (what: string) => `${seed}-${what}-${++n}`;
  const submit = async (command: Command) => {
    const result = await engine.submit(command);
    print({ commandId: command.commandId, threadId: result.threadId, from: result.fromThreadSeq, to: result.toThreadSeq });
  };
  print('READY');
  for (;;) {
    const threadId = id('thread');
    await submit({ type: 'thread.create', commandId: id('create'), threadId, title: 'crash', workspace: null, owner: null });
    for (let turn = 0; turn < 3; turn++) {
      const turnId = id('turn');
      const t = turnEvents(turnId);
      await submit({ type: 'turn.start', commandId: id('start'), threadId, turnId, input: { text: 'go' }, provider: { name: 'scripted', model: null } });
      const events: DomainEvent[] = [turn === 0 ? t.sessionStarted() : t.started(), ...(turn === 0 ? [t.started()] : [])];
      await submit({ type: 'turn.record', commandId: id('record'), threadId, turnId, events });
      for (let step = 1; step <= 1 + Math.floor(random() * 3); step++) {
        const parts: DomainEvent[] = [t.step(step), ...t.text(`${turnId}-s${step}-text`, step, ...Array.from({ length: 1 + Math.floor(random() * 5) }, () => 'chunk '))];
        const callId = `${turnId}-s${step}-call`;
        parts.push(...t.toolCall(`${turnId}-s${step}-tool`, step, callId, { step }), ...t.toolsStarted(step, [callId]), t.executing(`${turnId}-s${step}-tool`, callId));
        await submit({ type: 'turn.record', commandId: id('record'), threadId, turnId, events: parts });
        await submit({ type: 'turn.record', commandId: id('record'), threadId, turnId, events: [t.result(`${turnId}-s${step}-tool`, callId, 'ok'), t.stepFinished(step, 'toolCalls')] });
      }
      if (random() < 0.3) {
        await submit({ type: 'turn.interrupt', commandId: id('interrupt'), threadId, turnId, reason: 'user' });
        await submit({ type: 'turn.settle', commandId: id('settle'), threadId, turnId, outcome: { kind: 'interrupted', cause: 'deadline', reason: 'deadline' } });
      } else {
        await submit({ type: 'turn.record', commandId: id('record'), threadId, turnId, events: [t.completed()] });
      }
    }
  }
}

if (mode === 'repair-scenario') await repairScenario();
else if (mode === 'loop') await loop(Number(seedText));
else throw new Error(`unknown mode ${mode}`);
// Stay alive until killed: a crash, not a shutdown.
setInterval(() => undefined, 1 << 30);
