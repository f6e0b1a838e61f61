// A worker on this machine for an engine elsewhere (`turnloom serve --nats URL --no-worker`), reached only
// through NATS. Its `request` hook adds a house rule to every model call; the log records that it did.
import { OpenAiChatProvider, ScriptedProvider } from 'turnloom/providers';
import { NatsBus, Worker, openWorkspace } from 'turnloom/worker';

const bus = await NatsBus.connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
const workspace = await openWorkspace(process.argv[2] ?? process.cwd());
const key = process.env.OPENAI_API_KEY;
const provider = key ? new OpenAiChatProvider({ apiKey: key, defaultModel: process.env.OPENAI_MODEL ?? 'gpt-4.1-mini' }) : new ScriptedProvider();

const worker = await new Worker({
  bus,
  workspace: workspace.root,
  tools: workspace.tools,
  checkpoints: workspace.checkpoints,
  adapterFor: () => provider,
  hooks: {
    request: [{ name: 'house-rules', run: (_context, request) => ({ ...request, system: `${request.system}\nAnswer in one short paragraph.` }) }],
  },
}).start();
console.log(`worker ${worker.workerId} serves ${workspace.root}; Ctrl-C (or SIGTERM) stops it`);

await new Promise((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
});
await worker.stop();
await bus.close();
