import { describe, expect, it } from 'vitest';
import { InProcessHub, JSON_TYPE, decode, encode } from '../../bus/index.ts';
import { type BusMessage, TurnloomError } from '../../domain/index.ts';
import { ENGINE_HEADER, EngineAddresses, askEngines, unavailableIn } from '../../protocol/engineAddress.ts';

/**
 * How callers of a cluster ask (`TurnloomClient.call`, `WorkerLink.call`):
 * engines here are subscribers of an in-process bus, each answering (or
 * not) as a test needs; the attempts' waits are the real ones (1 s, 2 s…).
 */
describe('askEngines: the engine that answered last, and another after silence', () => {
  const shared = 'p.v1.api.thread.get';
  const addressed = (engineId: string) => `p.v1.api.${engineId}.thread.get`;
  const answer = (bus: ReturnType<InProcessHub['connect']>, message: BusMessage, body: object, engineId: string) =>
    bus.publish(message.reply!, encode(body, JSON_TYPE), { headers: { 'content-type': JSON_TYPE, [ENGINE_HEADER]: engineId } });
  const ask = (bus: ReturnType<InProcessHub['connect']>, addresses: EngineAddresses, timeoutMs = 6_000) =>
    askEngines(bus, {
      subjectFor: (engineId) => (engineId ? addressed(engineId) : shared),
      data: encode({ threadId: 'th1' }, JSON_TYPE),
      headers: { 'content-type': JSON_TYPE },
      timeoutMs,
      threadId: 'th1',
      addresses,
      retried: true,
      unavailable: (reply) => unavailableIn(decode(reply.data, JSON_TYPE) as object),
    });

  it('addresses the engine that answered for the thread, and passes over one that goes silent', async () => {
    const hub = new InProcessHub();
    const bus = hub.connect();
    const seen: string[] = [];
    let silent = false;
    hub.connect().subscribe(shared, (message) => {
      seen.push('shared');
      answer(bus, message, { result: 'from e1' }, 'e1');
    });
    hub.connect().subscribe(addressed('e1'), (message) => {
      seen.push('e1');
      if (!silent) answer(bus, message, { result: 'from e1, addressed' }, 'e1');
    });
    const addresses = new EngineAddresses();
    expect(decode((await ask(bus, addresses)).data, JSON_TYPE)).toEqual({ result: 'from e1' });
    expect(addresses.of('th1')).toBe('e1');
    expect(decode((await ask(bus, addresses)).data, JSON_TYPE)).toEqual({ result: 'from e1, addressed' });
    silent = true;
    const started = performance.now();
    expect(decode((await ask(bus, addresses)).data, JSON_TYPE)).toEqual({ result: 'from e1' });
    // One window of silence (1 s), then the shared subject.
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(seen).toEqual(['shared', 'e1', 'e1', 'shared']);
  });

  it('asks a single engine once: once one answered without naming itself, a slow answer is waited for, not asked for again', async () => {
    const hub = new InProcessHub();
    const bus = hub.connect();
    let asked = 0;
    hub.connect().subscribe(shared, (message) => {
      asked += 1;
      // A single engine's answer carries no engine header; the second request it gets is answered after 2.5 s, two windows' worth.
      const reply = () => bus.publish(message.reply!, encode({ result: `answer ${asked}` }, JSON_TYPE), { headers: { 'content-type': JSON_TYPE } });
      if (asked === 1) reply();
      else setTimeout(reply, 2_500);
    });
    const addresses = new EngineAddresses();
    expect(addresses.othersMayAnswer).toBe(true);
    expect(decode((await ask(bus, addresses)).data, JSON_TYPE)).toEqual({ result: 'answer 1' });
    expect(addresses.othersMayAnswer).toBe(false);
    expect(decode((await ask(bus, addresses)).data, JSON_TYPE)).toEqual({ result: 'answer 2' });
    // Asked again after 1 s and 3 s of silence, it would have had three copies of the request.
    expect(asked).toBe(2);
  });

  it('takes the first attempt’s answer when it comes after the second was sent: a slow engine is never cut off', async () => {
    const hub = new InProcessHub();
    const bus = hub.connect();
    let asked = 0;
    hub.connect().subscribe(shared, (message) => {
      asked += 1;
      // The first attempt is answered after 1.5 s, past its window; the second never.
      if (asked === 1) setTimeout(() => answer(bus, message, { result: 'slow but sure' }, 'e1'), 1_500);
    });
    expect(decode((await ask(bus, new EngineAddresses())).data, JSON_TYPE)).toEqual({ result: 'slow but sure' });
    expect(asked).toBe(2);
  });

  it('asks again after retryAfterMs when the answer says to, and takes any other unavailable as the answer', async () => {
    const hub = new InProcessHub();
    const bus = hub.connect();
    let asked = 0;
    hub.connect().subscribe(shared, (message) => {
      asked += 1;
      answer(bus, message, asked === 1 ? { error: TurnloomError.tryAgain('thread th1 is changing hands; try again').toJSON() } : { result: 'settled' }, 'e2');
    });
    expect(decode((await ask(bus, new EngineAddresses())).data, JSON_TYPE)).toEqual({ result: 'settled' });
    expect(asked).toBe(2);

    const tooLarge = hub.connect();
    tooLarge.subscribe('p.v1.api.thread.big', (message) => answer(bus, message, { error: new TurnloomError('unavailable', 'the answer is over the limit').toJSON() }, 'e2'));
    const reply = await askEngines(bus, {
      subjectFor: () => 'p.v1.api.thread.big',
      data: encode({}, JSON_TYPE),
      headers: {},
      timeoutMs: 6_000,
      threadId: undefined,
      addresses: new EngineAddresses(),
      retried: true,
      unavailable: (answered) => unavailableIn(decode(answered.data, JSON_TYPE) as object),
    });
    expect((decode(reply.data, JSON_TYPE) as { error: { message: string } }).error.message).toBe('the answer is over the limit');
  });

  it('nobody there is one error at once; silence until the deadline is one error then', async () => {
    const hub = new InProcessHub();
    const bus = hub.connect();
    await expect(ask(bus, new EngineAddresses())).rejects.toMatchObject({ kind: 'no_responders' });
    hub.connect().subscribe(shared, () => undefined);
    const started = performance.now();
    await expect(ask(bus, new EngineAddresses(), 2_500)).rejects.toMatchObject({ kind: 'timeout' });
    expect(performance.now() - started).toBeLessThan(4_000);
  });
});
