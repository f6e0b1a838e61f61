import { describe, expect, it } from 'vitest';
import type { TurnView } from '../../domain/index.ts';
import { TurnProgress } from '../../cli/run/turnProgress.ts';

/** A running turn whose answer holds one text part with `text`, as the log has it. */
const turnWith = (text: string): TurnView =>
  ({
    id: 't1',
    messages: [
      { id: 'u', role: 'user', parts: [] },
      { id: 'a', role: 'assistant', parts: [{ id: 'p1', kind: 'text', state: 'running.streaming', step: 1, text, signature: null, tool: null, task: null, error: null }] },
    ],
    steps: [{ step: 1, outcome: null }],
    state: 'running.streaming',
    startedAt: 1,
    usage: { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
    approvals: [],
    activities: [],
  }) as unknown as TurnView;

const shown = (items: ReturnType<TurnProgress['next']>) => items.map((item) => ('text' in item ? item.text : item.kind)).join('|');

describe('what a terminal shows of a turn’s text', () => {
  it('types from the live channel, and the log adds only what the live channel did not bring', () => {
    const progress = new TurnProgress('t1');
    expect(shown(progress.next(turnWith('')))).toBe('');
    expect(shown(progress.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: 'Hel' }))).toBe('Hel');
    expect(shown(progress.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: 'lo' }))).toBe('lo');
    // The log, written once a second, is behind the typing: nothing twice.
    expect(shown(progress.next(turnWith('Hel')))).toBe('');
    // …or ahead of it (a live delta that never came): only the rest.
    expect(shown(progress.next(turnWith('Hello wor')))).toBe(' wor');
    expect(shown(progress.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: ' w' }))).toBe('');
    expect(shown(progress.live({ turnId: 't1', step: 1, partId: 'p1', kind: 'text', text: 'orld' }))).toBe('ld');
    expect(shown(progress.next(turnWith('Hello world')))).toBe('');
  });

  it('shows no other turn’s typing, and no tool output as text', () => {
    const progress = new TurnProgress('t1');
    expect(progress.live({ turnId: 't2', step: 1, partId: 'p9', kind: 'text', text: 'elsewhere' })).toEqual([]);
    expect(progress.live({ turnId: 't1', step: 1, partId: 'p2', kind: 'toolOutput', text: 'npm test' })).toEqual([]);
  });
});
