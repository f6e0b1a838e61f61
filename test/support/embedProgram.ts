/**
 * A program that embeds turnloom as its README says: an engine with a local
 * worker on the in-process bus, a client that watches a thread (the default
 * watch, through the API) while one turn runs, then closes everything. It
 * prints what still holds the event loop once all is stopped, as JSON.
 */
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';

const [dataDir] = process.argv.slice(2);
const hub = new InProcessHub();
const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dataDir!), providers: { scripted: new ScriptedProvider({ steps: [[{ text: 'Done.' }]] }) } });
const client = new TurnloomClient(hub.connect());
const { threadId } = await client.call('thread.create', { title: 'embedded' });
const watch = await client.watchThread(threadId);
const { turnId } = await client.call('turn.start', { threadId, input: { text: 'hello' } });
await new Promise<void>((resolve) => {
  const subscription = watch.store.subscribe(() => {
    if (watch.context.view?.turns[turnId]?.state !== 'completed') return;
    subscription.unsubscribe();
    resolve();
  });
});
watch.close();
await server.stop();
setImmediate(() => process.stdout.write(`${JSON.stringify(process.getActiveResourcesInfo())}\n`));
