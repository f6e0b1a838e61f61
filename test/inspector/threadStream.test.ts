import { describe, expect, it } from 'vitest';
import { InProcessHub, MSGPACK, encode, subjects as subjectsFor } from '../../bus/index.ts';
import { TurnloomError } from '../../domain/index.ts';
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
    for (let i = 0; i < 5; i += 1) publish(subjects.live('th1'), [{ turnId: 't', step: 1, partId: 'p', kind: 'text', text: `secret ${i}` }]);
    publish(subjects.inspect('th1'), { threadId: 'th1', transitions: [], refused: [] });
    await bus.flush();
    answer(new TurnloomError('forbidden', 'thread th1 belongs to someone else'));
    await started;
    publish(subjects.live('th1'), [{ turnId: 't', step: 1, partId: 'p', kind: 'text', text: 'later secret' }]);
    await bus.flush();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent.map((message) => message.kind)).toEqual(['relay', 'failed']);
    expect(sent[1]).toMatchObject({ code: 'forbidden' });
    stream.close();
    await bus.close();
  });
});
