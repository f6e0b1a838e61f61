// One turn in this process: an engine, its API and a worker, on the folder you run it in.
// With no model key the scripted provider answers; pass your own in `providers` (see turnloom/providers).
import { openRuntime } from 'turnloom';

const runtime = await openRuntime({ workspace: process.cwd() });
try {
  const turn = await runtime.client.startTurn({ text: process.argv[2] ?? 'What is in this folder?', mode: 'full' });
  for await (const piece of turn.text()) process.stdout.write(piece);
  const settled = await turn.done;
  console.log(`\n${settled.state}${settled.error ? `: ${settled.error}` : ''} (${settled.usage.input} in / ${settled.usage.output} out tokens)`);
} finally {
  await runtime.close();
}
