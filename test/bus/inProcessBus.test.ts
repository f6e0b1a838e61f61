import { describe, expect, it } from 'vitest';
import { InProcessHub } from '../../bus/index.ts';
import { busContract } from './busContract.ts';

busContract('in-process', async () => {
  const hub = new InProcessHub();
  return { connect: async () => hub.connect(), dispose: async () => undefined };
});

describe('the in-process hub', () => {
  it('delivers a message to subscribers of its subject and of matching patterns in the order they subscribed, and to none that left', async () => {
    const hub = new InProcessHub();
    const bus = hub.connect();
    const heard: string[] = [];
    const listen = (subject: string, name: string) => bus.subscribe(subject, () => heard.push(name));
    listen('a.>', 'pattern 1');
    listen('a.b.c', 'named 1');
    const leaving = listen('a.b.c', 'named, left');
    listen('a.*.c', 'pattern 2');
    listen('a.b.c', 'named 2');
    listen('a.b', 'other subject');
    listen('x.>', 'other pattern');
    leaving.unsubscribe();
    bus.publish('a.b.c', new Uint8Array());
    await bus.flush();
    expect(heard).toEqual(['pattern 1', 'named 1', 'pattern 2', 'named 2']);
    heard.length = 0;
    // A subject whose last subscriber left has none: a request to it finds no responders.
    const only = listen('lone', 'lone');
    only.unsubscribe();
    await expect(bus.request('lone', new Uint8Array(), { timeoutMs: 1_000 })).rejects.toMatchObject({ kind: 'no_responders' });
    expect(heard).toEqual([]);
  });
});
