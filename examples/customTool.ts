// A tool of your own, its input typed by zod, and the turn's events as they come. The scripted model calls it and answers with what it returned: in its place, any of turnloom/providers (npm install openai).
import { openRuntime, tool } from 'turnloom';
import { ScriptedProvider } from 'turnloom/testing';
import { z } from 'zod';

const weather = tool({ name: 'weather', description: 'The weather in a city now', parameters: z.object({ city: z.string() }), kind: 'read', execute: async ({ city }) => ({ city, celsius: 21, sky: 'clear' }) });
const model = new ScriptedProvider((request) => ({ steps: [[{ toolCall: { name: 'weather', input: { city: 'Oslo' } } }], [{ text: `The weather tool says: ${request.messages.findLast((message) => message.role === 'tool')?.output}` }]] }));
const runtime = await openRuntime({ tools: [weather], providers: { model } });
const turn = await runtime.client.startTurn({ text: 'How warm is it in Oslo?', signal: AbortSignal.timeout(60_000) });
for await (const event of turn.events()) if (event.type === 'text.delta') process.stdout.write(event.text); else if (event.type === 'tool.finished') console.log(`[${event.name} ${JSON.stringify(event.input)}: ${event.result}]`);
console.log(`\n${(await turn.done).state}`);
await runtime.close();
