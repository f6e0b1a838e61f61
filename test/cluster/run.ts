// `npm run cluster [-- --workspace DIR --prefix P]`: a whole turnloom cluster on this machine, to try it (docs/cluster.md).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import { startNatsCluster } from '../support/natsCluster.ts';

const { values } = parseArgs({ options: { workspace: { type: 'string' }, prefix: { type: 'string', default: 'turnloom' } } });
const root = mkdtempSync(join(tmpdir(), 'turnloom-try-cluster-'));
const workspace = resolve(values.workspace ?? mkdtempSync(join(root, 'workspace-')));
const prefix = values.prefix!;

console.log('starting a 3-node nats-server cluster with JetStream on 127.0.0.1 (each node its own store dir)…');
const nats = await startNatsCluster(3);
const processes: CliProcess[] = [];
const stop = async () => {
  await Promise.all(processes.map((process) => process.kill('SIGTERM')));
  await nats.dispose();
};
try {
  for (let index = 1; index <= 3; index++) {
    const engine = runCli(['serve', '--nats', nats.url, '--cluster', '--no-worker', '--prefix', prefix, '--data', join(root, `engine${index}`)]);
    processes.push(engine);
    await engine.waitFor(/cluster: engine e\w+ of/, 60_000);
    console.log(`engine ${index} (pid ${engine.child.pid}): ${/cluster: engine (e\w+) of/.exec(engine.output())![1]}`);
  }
  const worker = runCli(['worker', '--nats', nats.url, '--prefix', prefix, '--workspace', workspace, '--id', 'try-worker']);
  processes.push(worker);
  await worker.waitFor('turnloom worker', 60_000);
  console.log(`worker (pid ${worker.child.pid}): try-worker in ${workspace} (${process.env.OPENAI_API_KEY || process.env.ANTHROPIC_API_KEY ? 'your provider key' : 'no key set, so the scripted provider answers'})`);
  // A first turn, to show it works: started through one engine, followed through the others.
  const bus = await NatsBus.connect({ servers: [...nats.urls] });
  try {
    const api = new TurnloomClient(bus, { prefix, timeoutMs: 10_000 });
    const { threadId } = await api.call('thread.create', { title: 'first turn on the cluster' });
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'say hello' } });
    for (let tries = 0; tries < 300; tries++) {
      const turn = (await api.call('thread.get', { threadId })).thread.turns[turnId]!;
      if (['completed', 'failed', 'interrupted'].includes(turn.state)) {
        console.log(`a first turn (thread ${threadId}): ${turn.state}: ${turn.messages[1].parts.map((part) => part.text ?? '').join('').slice(0, 120)}`);
        break;
      }
      await new Promise((wait) => setTimeout(wait, 100));
    }
  } finally {
    await bus.close();
  }
  console.log(`
The cluster is up. Reach it on any of its NATS servers:
  NATS:     ${nats.url}
  prefix:   ${prefix}
  follow it in a browser:   npx turnloom inspect --nats ${nats.urls[0]}${prefix === 'turnloom' ? '' : ` --prefix ${prefix}`}
  with the nats CLI (https://github.com/nats-io/natscli), ask any engine:
    nats --server ${nats.urls[1]} req ${prefix}.v1.api.health '{}'
  and start a thread and a turn through another:
    nats --server ${nats.urls[2]} req ${prefix}.v1.api.thread.create '{"threadId":"demo","mode":"full"}'
    nats --server ${nats.urls[2]} req ${prefix}.v1.api.turn.start '{"threadId":"demo","input":{"text":"list the files"}}'
  kill -9 an engine (its pid is above) while a turn runs, and watch the others take its shards within seconds.
Ctrl-C stops everything and removes ${root}.`);
  await new Promise<void>((resolveStop) => {
    process.once('SIGINT', resolveStop);
    process.once('SIGTERM', resolveStop);
  });
  console.log('stopping…');
} finally {
  await stop();
  const { rmSync } = await import('node:fs');
  rmSync(root, { recursive: true, force: true });
}
