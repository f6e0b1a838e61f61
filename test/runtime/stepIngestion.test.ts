import { describe, expect, it } from 'vitest';
import { StepIngestion } from '../../services/runtime/stepIngestion.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';

function ingestion(options: { maxBufferChars?: number } = {}) {
  let now = 0;
  const live: LiveDelta[] = [];
  const step = new StepIngestion({ turnId: 't', step: 1, live: (delta) => live.push(delta), now: () => now, flushMs: 50, ...options });
  return { step, live, advance: (ms: number) => (now += ms) };
}

describe('step ingestion', () => {
  it('sends every delta live at once but writes it to the log only after the time window', () => {
    const { step, live, advance } = ingestion();
    step.accept({ type: 'turn.started', responseId: 'r', model: 'm' });
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    expect(step.take()).toEqual([]);
    advance(50);
    expect(step.take().map((event) => event.type)).toEqual(['response.started', 'part.started']);
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'Hel' });
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'lo' });
    expect(live.map((delta) => delta.text)).toEqual(['Hel', 'lo']);
    expect(step.take()).toEqual([]);
    advance(49);
    expect(step.take()).toEqual([]);
    advance(1);
    expect(step.take()).toEqual([{ type: 'part.delta', turnId: 't', partId: 't-s1-1', text: 'Hello' }]);
  });

  it('starts the step with the events it leads with: they wait the window from the start and go first, with whatever the model said by then', () => {
    const { step, advance } = ingestion();
    step.lead([{ type: 'step.started', turnId: 't', step: 1, digest: 'd' }]);
    expect(step.nextDueInMs()).toBe(50);
    advance(30);
    step.accept({ type: 'turn.started', responseId: 'r', model: 'm' });
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'Hi' });
    expect(step.take()).toEqual([]);
    // Due when the step is, not when the answer's first piece is.
    expect(step.nextDueInMs()).toBe(20);
    advance(20);
    expect(step.take().map((event) => event.type)).toEqual(['step.started', 'response.started', 'part.started', 'part.delta']);
  });

  it('says when the oldest buffered delta falls due, so one timer can write it right then, with everything else that waits', () => {
    const { step, advance } = ingestion();
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    step.accept({ type: 'segment.started', segmentId: 'b', kind: 'reasoning' });
    step.drain();
    expect(step.nextDueInMs()).toBeNull();
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'first' });
    advance(20);
    step.accept({ type: 'text.delta', segmentId: 'b', text: 'second' });
    expect(step.nextDueInMs()).toBe(30);
    advance(30);
    expect(step.nextDueInMs()).toBe(0);
    // Whatever waits goes with the oldest: one write per window, not one per part.
    expect(step.take().map((event) => (event as { text?: string }).text)).toEqual(['first', 'second']);
    expect(step.nextDueInMs()).toBeNull();
  });

  it('writes a buffer as soon as it reaches the size cap', () => {
    const { step } = ingestion({ maxBufferChars: 10 });
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'reasoning' });
    step.drain();
    step.accept({ type: 'text.delta', segmentId: 'a', text: '123456' });
    expect(step.take()).toEqual([]);
    step.accept({ type: 'text.delta', segmentId: 'a', text: '7890' });
    expect(step.take()).toEqual([{ type: 'part.delta', turnId: 't', partId: 't-s1-1', text: '1234567890' }]);
  });

  it('writes what is buffered before any other event, so the log keeps the order', () => {
    const { step } = ingestion();
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'x' });
    step.accept({ type: 'toolCall.started', callId: 'c1', name: 'bash' });
    step.accept({ type: 'toolCall.inputDelta', callId: 'c1', text: '{"cmd":' });
    step.accept({ type: 'toolCall.inputDelta', callId: 'c1', text: '"ls"}' });
    step.accept({ type: 'toolCall.ready', callId: 'c1', input: { cmd: 'ls' } });
    step.accept({ type: 'segment.completed', segmentId: 'a', signature: null });
    expect(step.drain().map((event) => [event.type, 'text' in event ? event.text : undefined])).toEqual([
      ['part.started', undefined],
      ['part.delta', 'x'],
      ['part.started', undefined],
      ['tool.inputDelta', '{"cmd":"ls"}'],
      ['tool.inputReady', undefined],
      ['part.completed', undefined],
    ]);
    expect(step.toolCalls).toEqual([{ callId: 'c1', name: 'bash', input: { cmd: 'ls' } }]);
  });

  it('keeps a segment’s part id when the provider announces it twice, so the machines can refuse the repeat', () => {
    const { step } = ingestion();
    step.accept({ type: 'segment.started', segmentId: '0', kind: 'text' });
    step.accept({ type: 'segment.started', segmentId: '0', kind: 'text' });
    const started = step.drain().filter((event) => event.type === 'part.started');
    expect(started).toHaveLength(2);
    expect(new Set(started.map((event) => ('partId' in event ? event.partId : '')))).toEqual(new Set(['t-s1-1']));
  });

  it('holds a part’s start and end with the deltas, so a fast answer is one write however many pieces it came in', () => {
    const { step, advance } = ingestion();
    step.accept({ type: 'turn.started', responseId: 'r', model: 'm' });
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    for (let n = 0; n < 100; n++) step.accept({ type: 'text.delta', segmentId: 'a', text: 'x' });
    step.accept({ type: 'segment.completed', segmentId: 'a', signature: null });
    advance(49);
    expect(step.take()).toEqual([]);
    expect(step.nextDueInMs()).toBe(1);
    step.accept({ type: 'turn.completed', stopReason: 'stop', rawReason: null });
    expect(step.drain().map((event) => event.type)).toEqual(['response.started', 'part.started', 'part.delta', 'part.completed', 'response.completed']);
  });

  it('drains everything at the end of the call', () => {
    const { step } = ingestion();
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'tail' });
    expect(step.drain().map((event) => event.type)).toEqual(['part.started', 'part.delta']);
    expect(step.drain()).toEqual([]);
  });
});

describe('step ingestion at the end of an answer', () => {
  it('closes what the provider left open: text is final, a tool call without input cannot run', () => {
    const { step } = ingestion();
    step.accept({ type: 'segment.started', segmentId: 'a', kind: 'text' });
    step.accept({ type: 'text.delta', segmentId: 'a', text: 'unclosed' });
    step.accept({ type: 'toolCall.started', callId: 'c1', name: 'bash' });
    step.accept({ type: 'turn.completed', stopReason: 'stop', rawReason: null });
    step.closeUnfinished();
    expect(step.drain().map((event) => event.type)).toEqual(['part.started', 'part.delta', 'part.started', 'response.completed', 'part.completed', 'part.failed']);
    expect(step.toolCalls).toEqual([]);
  });
});
