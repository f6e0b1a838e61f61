import { resolve } from 'node:path';
import { InProcessHub } from '../bus/index.ts';
import { TurnloomClient } from '../client/index.ts';
import type { TurnView } from '../domain/index.ts';
import { startTurnloomServer } from '../services/turnloomServer.ts';
import { parseOptions } from './cliErrors.ts';
import { openStore } from './openStore.ts';
import { providersFromEnvironment } from './providerRegistry.ts';

export const demoUsage = `turnloom demo [options]   one turn end to end on the embedded defaults
  --prompt TEXT       what to ask (default: a small coding request)
  --data DIR          LMDB data folder (default .turnloom/demo)
  --deny              refuse the tool approval instead of allowing it
  --script FILE       script for the scripted provider (see docs/providers.md)`;

const settled = (turn: TurnView | undefined) => turn !== undefined && ['completed', 'failed', 'interrupted'].includes(turn.state);

/**
 * The main job on embedded defaults: the engine, its API and a client on the
 * in-process bus, LMDB in a local folder, and the scripted provider unless an
 * API key is set. Streams the answer as it is typed, answers the approval,
 * and prints what was recorded.
 */
export async function demoCommand(args: string[]): Promise<number> {
  const { values } = parseOptions('demo', {
    args,
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      prompt: { type: 'string', default: 'Find out why the login test is flaky and fix it.' },
      data: { type: 'string', default: '.turnloom/demo' },
      deny: { type: 'boolean', default: false },
      script: { type: 'string' },
    },
  });
  if (values.help) {
    console.log(demoUsage);
    return 0;
  }
  const hub = new InProcessHub();
  const setup = await providersFromEnvironment(process.env, values.script);
  const dataDir = resolve(values.data!);
  const store = openStore(dataDir);
  const server = await startTurnloomServer({ bus: hub.connect(), store, providers: setup.providers, defaultProvider: setup.defaultProvider }).catch(async (error: unknown) => {
    await store.close().catch(() => {});
    throw error;
  });
  try {
    return await runDemo(hub, dataDir, setup.summary, values.prompt!, values.deny!);
  } finally {
    await server.stop();
  }
}

async function runDemo(hub: InProcessHub, dataDir: string, summary: string, prompt: string, deny: boolean): Promise<number> {
  const client = new TurnloomClient(hub.connect());
  console.log(`turnloom demo — in-process bus, data in ${dataDir}, ${summary}\n`);

  const { threadId } = await client.call('thread.create', { title: 'demo', workspace: process.cwd() });
  const watch = await client.watchThread(threadId);
  let lastPart = '';
  watch.onLive((delta) => {
    if (delta.partId !== lastPart) {
      process.stdout.write(`\n[${delta.kind}] `);
      lastPart = delta.partId;
    }
    process.stdout.write(delta.text);
  });

  console.log(`> ${prompt}`);
  const { turnId } = await client.call('turn.start', { threadId, input: { text: prompt } });
  const answered = new Set<string>();
  await new Promise<void>((done) => {
    const check = () => {
      const turn = watch.context.view?.turns[turnId];
      for (const approval of turn?.approvals ?? []) {
        if (approval.state !== 'pending' || answered.has(approval.id)) continue;
        answered.add(approval.id);
        const decision = deny ? 'deny' : 'approve';
        console.log(`\n\n? approval requested: ${approval.toolName} ${JSON.stringify(approval.input)} — ${decision === 'approve' ? 'allowing' : 'refusing'} it (the demo answers for you)`);
        client
          .call('approval.respond', { threadId, approvalId: approval.id, decision, note: 'answered by turnloom demo' })
          .catch((error: unknown) => console.error(`\nturnloom demo: could not answer the approval: ${(error as Error).message}`));
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
  await client.bus.close();
  return turn.state === 'completed' ? 0 : 1;
}
