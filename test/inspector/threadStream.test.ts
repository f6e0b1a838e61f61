import { describe, expect, it } from 'vitest';
import { InProcessHub, MSGPACK, encode, subjects as subjectsFor } from '../../bus/index.ts';
import { type DomainEvent, type StoredEvent, TurnloomError } from '../../domain/index.ts';
import type { ApiCaller } from '../../client/index.ts';
import { type StreamMessage, ThreadStream } from '../../inspector/index.ts';

describe('ThreadStream', () => {
  it('forwards nothing of a thread before the API let its token read it, and nothing after the API said no', async () => {
    const bus = new InProcessHub().connect();
    const subjects = subjectsFor('ts');
    let answer!: (error: TurnloomError) => void;
    // The API's answer is held back, so the thread's subjects are busy while the token is being checked.
    const api: ApiCaller = { bus, subjects, call: () => new Promise((_, reject) => (answer = reject)) as never, notify: () => undefined };
    const sent: StreamMessage[] = [];
    const stream = new ThreadStream(api, 'th1', 0, async (message) => void sent.push(message));
    const started = stream.start();
    const publish = (subject: string, value: unknown) => bus.publish(subject, encode(value, MSGPACK), { headers: { 'content-type': MSGPACK } });
    for (let i = 0; i < 5; i += 1) publish(subjects.live('default', 'th1', 'c'.repeat(64)), [{ turnId: 't', step: 1, partId: 'p', kind: 'text', text: `secret ${i}` }]);
    publish(subjects.inspect('th1'), { threadId: 'th1', transitions: [], refused: [] });
    await bus.flush();
    answer(new TurnloomError('forbidden', 'thread th1 belongs to someone else'));
    await started;
    publish(subjects.live('default', 'th1', 'c'.repeat(64)), [{ turnId: 't', step: 1, partId: 'p', kind: 'text', text: 'later secret' }]);
    await bus.flush();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent.map((message) => message.kind)).toEqual(['relay', 'failed']);
    expect(sent[1]).toMatchObject({ code: 'forbidden' });
    stream.close();
    await bus.close();
  });

  it('forwards live deltas only from the channel of the open turn’s lease, as the log it sent says, or as the thread says when it resumes past the lease', async () => {
    const bus = new InProcessHub().connect();
    const subjects = subjectsFor('ts');
    const keyHash = 'a'.repeat(64);
    const stored = (threadSeq: number, event: DomainEvent): StoredEvent => ({ seq: threadSeq, threadId: 'th1', threadSeq, commandId: `c${threadSeq}`, at: 0, event });
    const log = [stored(1, { type: 'thread.renamed', title: 'x' }), stored(2, { type: 'turn.leased', turnId: 't', workerId: 'w', token: 2, keyHash, process: null })];
    const api: ApiCaller = {
      bus,
      subjects,
      call: (async (method: string, params: { after: number }) => {
        if (method === 'thread.get') return { thread: { seq: log.length, environment: 'default', openTurnId: 't', turns: { t: { lease: { keyHash } } } } };
        return { events: log.filter((event) => event.threadSeq > params.after), lastSeq: log.length };
      }) as never,
      notify: () => undefined,
    };
    const delta = (text: string) => encode([{ turnId: 't', step: 1, partId: 'p', kind: 'text', text }], MSGPACK);
    const ours = subjects.live('default', 'th1', keyHash);
    const theirs = subjects.live('default', 'th1', 'b'.repeat(64));
    const typed = (sent: StreamMessage[]) => sent.flatMap((message) => (message.kind === 'live' ? message.deltas.map((one) => one.text) : []));

    for (const after of [0, 2]) {
      const sent: StreamMessage[] = [];
      const stream = new ThreadStream(api, 'th1', after, async (message) => void sent.push(message));
      await stream.start();
      bus.publish(theirs, delta('forged'), {});
      bus.publish(ours, delta(`from the lease, after ${after}`), {});
      await bus.flush();
      expect(typed(sent)).toEqual([`from the lease, after ${after}`]);
      stream.close();
    }

    // The turn ends: its lease's channel is no one's any more.
    const sent: StreamMessage[] = [];
    const stream = new ThreadStream(api, 'th1', 0, async (message) => void sent.push(message));
    await stream.start();
    log.push(stored(3, { type: 'turn.completed', turnId: 't', stopReason: 'stop' }));
    bus.publish(subjects.events('th1'), encode(log[2], MSGPACK), {});
    await bus.flush();
    await expect.poll(() => sent.some((message) => message.kind === 'event' && message.event.threadSeq === 3)).toBe(true);
    bus.publish(ours, delta('after the turn'), {});
    await bus.flush();
    expect(typed(sent)).toEqual([]);
    stream.close();
    await bus.close();
  });
});
