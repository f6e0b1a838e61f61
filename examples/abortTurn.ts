// A turn stops when its AbortSignal aborts, as fetch would: here half a second into a slow answer. It settles `interrupted`.
import { openRuntime } from 'turnloom';
import { ScriptedProvider } from 'turnloom/testing';

const model = new ScriptedProvider({ chunkSize: 1, delayMs: 20, steps: [[{ text: 'A long answer that takes its time. '.repeat(40) }]] });
const runtime = await openRuntime({ providers: { model } });
const stop = new AbortController();
const turn = await runtime.client.startTurn({ text: 'Take your time.', signal: stop.signal });
let abortedAt = 0;
setTimeout(() => ((abortedAt = performance.now()), stop.abort('the user moved on')), 500);
const settled = await turn.done;
console.log(`${settled.state} (${settled.error}) ${Math.round(performance.now() - abortedAt)} ms after the abort`);
await runtime.close();
