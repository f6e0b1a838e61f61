/**
 * A worker process for the capacity bench: `turnloom worker`'s worker with
 * the scripted provider, whose durable flush window is the bench's to set
 * (`turnloom worker` keeps the default), so a ramp can run at the durable
 * write rate the worker's outbox is moving to, one write a second per
 * streaming turn. Arguments: NATS URL, subject prefix, script file,
 * concurrency, flush window in ms. Says `ready` once it said hello.
 */
import { readFileSync } from 'node:fs';
import { ScriptedProvider } from '../adapters/providers/scriptedProvider.ts';
import { NatsBus } from '../bus/index.ts';
import { Worker } from '../services/worker/worker.ts';

const [url, prefix, scriptPath, concurrency, flushMs] = process.argv.slice(2);
const script = JSON.parse(readFileSync(scriptPath!, 'utf8')) as ConstructorParameters<typeof ScriptedProvider>[0];
const bus = await NatsBus.connect({ servers: url! });
const worker = await new Worker({ bus, prefix: prefix!, adapterFor: () => new ScriptedProvider(script), concurrency: Number(concurrency), loop: { flushMs: Number(flushMs) } }).start();
console.log('ready');
process.once('SIGTERM', () => {
  void worker
    .stop()
    .then(() => bus.close())
    .finally(() => process.exit(0));
});
