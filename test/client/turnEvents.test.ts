import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../lib/providers.ts';
import { type Runtime, type TurnEvent, type TurnEventType, openRuntime } from '../../lib/index.ts';
import type { ProviderRequest, TurnView } from '../../domain/index.ts';
import { TurnEventFeed } from '../../client/turnEvents.ts';
import { gitRepo } from '../cli/runFixtures.ts';

/**
 * What a program does with the union: a `switch` that names every kind and
 * a `never` in its `default`. `npm run typecheck` compiles this file, so a
 * kind added to `TurnEvent` and not handled here fails the build.
 */
function describeEvent(event: TurnEvent): string {
  switch (event.type) {
    case 'turn.started':
      return 'started';
    case 'step.started':
      return `step ${event.step}`;
    case 'text.delta':
      return `text ${event.text}`;
    case 'reasoning.delta':
      return `reasoning ${event.text}`;
    case 'tool.started':
      return `tool ${event.name}`;
    case 'tool.output':
      return `output ${event.output}`;
    case 'tool.finished':
      return `finished ${event.name} ${event.state}: ${event.result}`;
    case 'approval.asked':
      return `asked ${event.approval.toolName}`;
    case 'approval.answered':
      return `answered ${event.decision}`;
    case 'subagent.started':
      return `subagent ${event.agent}`;
    case 'subagent.settled':
      return `subagent ${event.status}`;
    case 'step.finished':
      return `step ${event.step} ${event.outcome}`;
    case 'usage':
      return `usage ${event.usage.output}`;
    case 'activity':
      return `activity ${event.kind}`;
    case 'turn.settled':
      return `settled ${event.turn.state}`;
    default: {
      const unhandled: never = event;
      return unhandled;
    }
  }
}

/** A switch that forgets one kind does not compile: its `never` check fails (the expected error is asserted by tsc itself). */
export function forgetsOne(event: TurnEvent): string {
  switch (event.type) {
    case 'turn.started':
    case 'step.started':
    case 'text.delta':
    case 'reasoning.delta':
    case 'tool.started':
    case 'tool.output':
    case 'tool.finished':
    case 'approval.asked':
    case 'approval.answered':
    case 'subagent.started':
    case 'subagent.settled':
    case 'step.finished':
    case 'usage':
    case 'activity':
      return event.type;
    default: {
      // @ts-expect-error -- 'turn.settled' is not handled above, so `event` is not `never` here.
      const unhandled: never = event;
      return unhandled;
    }
  }
}

const types = (events: TurnEvent[]) => events.map((event) => event.type);
/** The kinds in order with runs of the same kind (deltas, usage) folded into one. */
const story = (events: TurnEvent[]) => types(events).filter((type, index, all) => type !== all[index - 1]);

describe('turn.events(): a turn as typed events, in order', () => {
  const runtimes: Runtime[] = [];
  const cleanup: Array<() => void> = [];
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
    for (const step of cleanup.splice(0)) step();
  });
  const open = async (...args: Parameters<typeof openRuntime>) => {
    const runtime = await openRuntime(...args);
    runtimes.push(runtime);
    return runtime;
  };

  it('steps, text and reasoning with their step, an approval asked and answered, a tool call started and finished with its result, usage, settled; text() separates the steps', async () => {
    const repo = gitRepo();
    cleanup.push(() => repo.remove());
    const script = {
      chunkSize: 4,
      steps: [
        [{ reasoning: 'Look first.' }, { text: 'I will look first.' }, { toolCall: { name: 'bash', input: { command: 'echo hello-from-bash' } } }],
        [{ text: 'The workspace says hello.' }],
      ],
    };
    const runtime = await open({ workspace: repo.path, providers: { scripted: new ScriptedProvider(script) } });
    const turn = await runtime.client.startTurn({ text: 'look', mode: 'ask', onApproval: () => 'approve' });
    const events: TurnEvent[] = [];
    for await (const event of turn.events()) events.push(event);
    const settled = await turn.done;

    // A running command's latest output may come or not (the live channel is a preview): left out of the story.
    expect(story(events.filter((event) => event.type !== 'tool.output'))).toEqual([
      'turn.started',
      'step.started',
      'reasoning.delta',
      'text.delta',
      'approval.asked',
      'approval.answered',
      'tool.started',
      'tool.finished',
      'step.finished',
      'usage',
      'step.started',
      'text.delta',
      'step.finished',
      'usage',
      'turn.settled',
    ]);
    expect(events.at(-1)).toEqual({ type: 'turn.settled', turnId: turn.turnId, turn: settled });
    // Every delta names its step, and a part's deltas add up to its text.
    const deltas = events.filter((event): event is Extract<TurnEvent, { type: 'text.delta' }> => event.type === 'text.delta');
    expect(deltas.filter((delta) => delta.step === 1).map((delta) => delta.text).join('')).toBe('I will look first.');
    expect(deltas.filter((delta) => delta.step === 2).map((delta) => delta.text).join('')).toBe('The workspace says hello.');
    const reasoning = events.filter((event) => event.type === 'reasoning.delta');
    expect(reasoning.map((event) => (event as { text: string }).text).join('')).toBe('Look first.');
    expect(events.find((event) => event.type === 'approval.answered')).toMatchObject({ decision: 'approved' });
    expect(events.find((event) => event.type === 'tool.finished')).toMatchObject({ name: 'bash', input: { command: 'echo hello-from-bash' }, state: 'completed', error: null, result: expect.stringContaining('hello-from-bash') });
    expect(events.filter((event) => event.type === 'step.finished').map((event) => (event as { outcome: string }).outcome)).toEqual(['toolCalls', 'stop']);
    const usage = events.filter((event) => event.type === 'usage').at(-1) as Extract<TurnEvent, { type: 'usage' }>;
    expect(usage.usage).toEqual(settled.usage);
    expect(settled.usage.output).toBeGreaterThan(0);

    const pieces: string[] = [];
    for await (const piece of turn.text()) pieces.push(piece);
    expect(pieces.join('')).toBe('I will look first.\n\nThe workspace says hello.');
    expect(settled.text).toBe(pieces.join(''));
    // The program's switch reads each of them.
    expect(events.map(describeEvent)).toContain('finished bash completed: ' + (events.find((event) => event.type === 'tool.finished') as { result: string }).result);
  });

  it('a refused call ends with tool.finished (error) and no tool.started; the model reads why', async () => {
    const repo = gitRepo();
    cleanup.push(() => repo.remove());
    const script = { steps: [[{ toolCall: { name: 'bash', input: { command: 'touch ran.txt' } } }], [{ text: 'It was refused.' }]] };
    const runtime = await open({ workspace: repo.path, providers: { scripted: new ScriptedProvider(script) } });
    const turn = await runtime.client.startTurn({ text: 'run it', mode: 'ask', onApproval: () => 'deny' });
    const events: TurnEvent[] = [];
    for await (const event of turn.events()) events.push(event);
    expect(types(events)).not.toContain('tool.started');
    expect(events.find((event) => event.type === 'approval.answered')).toMatchObject({ decision: 'denied' });
    expect(events.find((event) => event.type === 'tool.finished')).toMatchObject({ state: 'error', result: expect.stringContaining('denied'), error: expect.stringContaining('denied') });
  });

  it('a task call: the sub-agent started and settled, inside its tool call', async () => {
    const scripted = new ScriptedProvider((request: ProviderRequest) => {
      const prompt = request.messages.find((message) => message.role === 'user');
      const child = prompt?.role === 'user' && prompt.text === 'count the files';
      const answered = request.messages.some((message) => message.role === 'tool');
      if (child) return { steps: [[{ text: 'There are none.' }]] };
      return answered ? { steps: [[{ text: 'The explorer says there are none.' }]] } : { steps: [[{ toolCall: { name: 'task', input: { agent: 'explore', prompt: 'count the files', description: 'count' } } }]] };
    });
    const runtime = await open({ providers: { scripted } });
    const turn = await runtime.client.startTurn({ text: 'delegate it', mode: 'full' });
    const events: TurnEvent[] = [];
    for await (const event of turn.events()) events.push(event);
    expect(story(events).filter((type) => type.startsWith('tool.') || type.startsWith('subagent.'))).toEqual(['tool.started', 'subagent.started', 'subagent.settled', 'tool.finished']);
    const settledChild = events.find((event) => event.type === 'subagent.settled') as Extract<TurnEvent, { type: 'subagent.settled' }>;
    expect(settledChild).toMatchObject({ status: 'completed', answer: 'There are none.' });
    expect(events.find((event) => event.type === 'subagent.started')).toMatchObject({ agent: 'explore', prompt: 'count the files', description: 'count', childThreadId: settledChild.childThreadId });
    expect((await turn.done).text).toBe('The explorer says there are none.');
  });

  it('an interrupted turn ends with turn.settled (interrupted), and every iterator ends', async () => {
    const runtime = await open({ providers: { scripted: new ScriptedProvider({ chunkSize: 1, delayMs: 20, steps: [[{ text: 'on and on '.repeat(50) }]] }) } });
    const turn = await runtime.client.startTurn({ text: 'go on' });
    const events: TurnEvent[] = [];
    for await (const event of turn.events()) {
      events.push(event);
      if (event.type === 'text.delta' && events.filter((seen) => seen.type === 'text.delta').length === 3) await turn.interrupt('enough');
    }
    expect(events.at(-1)).toMatchObject({ type: 'turn.settled', turn: { state: 'interrupted', error: 'enough' } });
    expect(story(events)).toContain('step.finished');
  });
});

describe('TurnEventFeed: views and live deltas into events', () => {
  const part = (id: string, step: number, text: string, state = 'running.content') => ({ id, kind: 'text' as const, state, step, text, signature: null, tool: null, task: null, error: null });
  const turnWith = (parts: ReturnType<typeof part>[], steps: number[], state = 'running.betweenSteps'): TurnView =>
    ({
      id: 't1',
      state,
      startedAt: 1,
      messages: [
        { id: 'u', role: 'user', parts: [] },
        { id: 'a', role: 'assistant', parts },
      ],
      steps: steps.map((step) => ({ step, responseId: null, model: null, stopReason: 'stop', outcome: 'stop', finishReason: null, usage: null, error: null })),
      approvals: [],
      activities: [],
      usage: { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
      error: null,
      interrupt: null,
    }) as unknown as TurnView;

  it('types from the live channel; the log adds only what the live channel did not bring', () => {
    const feed = new TurnEventFeed('thr', 't1');
    const texts = (events: TurnEvent[]) => events.flatMap((event) => (event.type === 'text.delta' ? [event.text] : [])).join('|');
    const running = (text: string) => ({ ...turnWith([part('p1', 1, text)], [1]), steps: [{ step: 1, outcome: null }] }) as unknown as TurnView;
    // Typed before the log has its first step (the worker writes a step with its first second of answer): the delta opens the turn and the step.
    expect(types(feed.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: 'Hel' }))).toEqual(['turn.started', 'step.started', 'text.delta']);
    expect(texts(feed.live({ turnId: 't1', step: 3, partId: 'p3', kind: 'text', text: 'ahead' }))).toBe('');
    expect(feed.next(running('H'))).toEqual([]);
    expect(texts(feed.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: 'lo' }))).toBe('lo');
    // The log behind the typing: nothing twice; ahead of it (a live delta that never came): only the rest.
    expect(texts(feed.next(running('Hello')))).toBe('');
    expect(texts(feed.next(running('Hello wor')))).toBe(' wor');
    expect(texts(feed.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: ' world' }))).toBe('ld');
    expect(feed.live({ turnId: 't2', step: 1, partId: 'p9', kind: 'text', text: 'elsewhere' })).toEqual([]);
  });

  it('a view that skipped events (a snapshot after a gap) still gives every fact once, each step in its place', () => {
    const feed = new TurnEventFeed('thr', 't1');
    const seen: TurnEventType[] = types(feed.next(turnWith([part('p1', 1, 'One.', 'completed'), part('p2', 2, 'Two.', 'completed')], [1, 2], 'completed')));
    expect(seen).toEqual(['turn.started', 'step.started', 'text.delta', 'step.finished', 'step.started', 'text.delta', 'step.finished', 'turn.settled']);
    expect(feed.next(turnWith([part('p1', 1, 'One.', 'completed')], [1], 'completed'))).toEqual([]);
  });
});
