import { describe, expect, it } from 'vitest';
import { IllegalTransition } from '../../domain/index.ts';
import { sessionMachine } from '../../machines/index.ts';
import { strictSend } from '../../services/index.ts';
import { drive, stateOf } from './drive.ts';

const input = { threadId: 'th1' };

describe('session machine', () => {
  it('starts lazily for the first turn and serves later turns from ready', () => {
    const session = drive(sessionMachine, input, [
      { type: 'turn.begin', turnId: 't1' },
      { type: 'session.started', providerSessionId: 'ps1' },
      { type: 'turn.end', turnId: 't1' },
    ]);
    expect(stateOf(session)).toBe('ready');
    expect(session.getSnapshot().context.providerSessionId).toBe('ps1');
    strictSend(session, { type: 'turn.begin', turnId: 't2' });
    expect(stateOf(session)).toBe('running');
  });

  it('rejects a second turn while one runs, and while one waits for the session', () => {
    const running = drive(sessionMachine, input, [
      { type: 'turn.begin', turnId: 't1' },
      { type: 'session.started', providerSessionId: 'ps1' },
    ]);
    expect(() => strictSend(running, { type: 'turn.begin', turnId: 't2' })).toThrow(IllegalTransition);
    expect(stateOf(running)).toBe('running');

    const starting = drive(sessionMachine, input, [{ type: 'turn.begin', turnId: 't1' }]);
    expect(() => strictSend(starting, { type: 'turn.begin', turnId: 't2' })).toThrow(IllegalTransition);
  });

  it('restarts from error on the next turn and clears the failure', () => {
    const session = drive(sessionMachine, input, [
      { type: 'turn.begin', turnId: 't1' },
      { type: 'session.failed', reason: 'provider crashed' },
    ]);
    expect(stateOf(session)).toBe('error');
    expect(session.getSnapshot().context.failure).toBe('provider crashed');
    strictSend(session, { type: 'turn.end', turnId: 't1' });
    strictSend(session, { type: 'turn.begin', turnId: 't2' });
    strictSend(session, { type: 'session.started', providerSessionId: 'ps2' });
    expect(stateOf(session)).toBe('running');
    expect(session.getSnapshot().context.failure).toBeNull();
  });

  it('stops through stopping while the turn that held it settles', () => {
    const session = drive(sessionMachine, input, [
      { type: 'turn.begin', turnId: 't1' },
      { type: 'session.started', providerSessionId: 'ps1' },
      { type: 'session.stopRequested', reason: 'user' },
      { type: 'turn.end', turnId: 't1' },
      { type: 'session.stopped' },
    ]);
    expect(stateOf(session)).toBe('stopped');
    expect(session.getSnapshot().context.providerSessionId).toBeNull();
  });

  it('lets the turn that held it end after the session stopped, and marks a start the turn abandoned as failed', () => {
    const stopped = drive(sessionMachine, input, [
      { type: 'turn.begin', turnId: 't1' },
      { type: 'session.failed', reason: 'crashed' },
      { type: 'session.stopRequested', reason: 'user' },
      { type: 'turn.end', turnId: 't1' },
    ]);
    expect(stateOf(stopped)).toBe('stopped');
    const abandoned = drive(sessionMachine, input, [
      { type: 'turn.begin', turnId: 't1' },
      { type: 'turn.end', turnId: 't1' },
    ]);
    expect(stateOf(abandoned)).toBe('error');
    expect(abandoned.getSnapshot().context.failure).toMatch(/before the session started/);
    strictSend(abandoned, { type: 'turn.begin', turnId: 't2' });
    expect(stateOf(abandoned)).toBe('starting');
  });

  it('rejects stopping a session that never started, and a confirmation nobody asked for', () => {
    const idle = drive(sessionMachine, input, []);
    expect(() => strictSend(idle, { type: 'session.stopRequested', reason: 'user' })).toThrow(IllegalTransition);
    expect(() => strictSend(idle, { type: 'session.started', providerSessionId: 'x' })).toThrow(IllegalTransition);
    expect(stateOf(idle)).toBe('idle');
  });
});
