import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { InProcessHub, MSGPACK, decode } from '../bus/index.ts';
import { TurnloomClient } from '../client/index.ts';
import type { TurnView } from '../services/engine/threadView.ts';
import type { LiveDelta } from '../services/runtime/stepIngestion.ts';
import { startTurnloomServer } from '../services/turnloomServer.ts';
import { providersFromEnvironment } from './providerRegistry.ts';

export const demoUsage = `turnloom demo [options]   one turn end to end on the embedded defaults
  --prompt TEXT       what to ask (default: a small coding request)
  --data DIR          LMDB data folder (default .turnloom/demo)
  --deny              refuse the tool approval instead of allowing it
  --script FILE       script for the scripted provider`;

const settled = (turn: TurnView | undefined) => turn !== undefined && ['completed', 'failed', 'interrupted'].includes(turn.state);

/**
 * The main job on embedded defaults: the engine, its API and a client on the
 * in-process bus, LMDB in a local folder, and the scripted provider unless an
 * API key is set. Streams the answer as it is typed, answers the approval,
 * and prints what was recorded.
 */
export async function demoCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      prompt: { type: 'string', default: 'Find out why the login test is flaky and fix it.' },
      data: { type: 'string', default: '.turnloom/demo' },
      deny: { type: 'boolean', default: false },
      script: { type: 'string' },
    },
  });
  const hub = new InProcessHub();
  const setup = providersFromEnvironment(process.env, values.script);
  const dataDir = resolve(values.data!);
  const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dataDir), providers: setup.providers, defaultProvider: setup.defaultProvider });
  const client = new TurnloomClient(hub.connect());
  console.log(`turnloom demo — in-process bus, data in ${dataDir}, ${setup.summary}\n`);

  const { threadId } = await client.call('thread.create', { title: 'demo', workspace: process.cwd() });
  const watch = await client.watchThread(threadId);
  let lastPart = '';
  client.bus.subscribe(server.subjects.live(threadId), (message) => {
    const delta = decode(message.data, MSGPACK) as LiveDelta;
    if (delta.partId !== lastPart) {
      process.stdout.write(`\n[${delta.kind}] `);
      lastPart = delta.partId;
    }
    process.stdout.write(delta.text);
  });
  await client.bus.flush();

  console.log(`> ${values.prompt}`);
  const { turnId } = await client.call('turn.start', { threadId, input: { text: values.prompt! } });
  const answered = new Set<string>();
  await new Promise<void>((done) => {
    const check = () => {
      const turn = watch.context.view?.turns[turnId];
      for (const approval of turn?.approvals ?? []) {
        if (approval.state !== 'pending' || answered.has(approval.id)) continue;
        answered.add(approval.id);
        const decision = values.deny ? 'deny' : 'approve';
        console.log(`\n\n? approval requested: ${approval.toolName} ${JSON.stringify(approval.input)} — ${decision === 'approve' ? 'allowing' : 'refusing'} it (the demo answers for you)`);
        void client.call('approval.respond', { threadId, approvalId: approval.id, decision, note: 'answered by turnloom demo' });
      }
      if (settled(turn)) done();
    };
    watch.store.subscribe(check);
    check();
  });
  await watch.settled();

  const turn = watch.context.view!.turns[turnId]!;
  const stored = (await client.call('thread.events', { threadId, after: 0 })).events;
  console.log(`\n\nturn ${turn.state}${turn.error ? `: ${turn.error}` : ''}; ${turn.steps.length} model calls; usage ${JSON.stringify(turn.usage)}`);
  console.log(`recorded ${stored.length} events for this thread; parts: ${turn.messages[1].parts.map((part) => `${part.kind}:${part.state}`).join(', ')}`);
  watch.close();
  await server.stop();
  await client.bus.close();
  return turn.state === 'completed' ? 0 : 1;
}
