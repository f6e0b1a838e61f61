import { WorkspaceTools } from '../../adapters/tools/index.ts';

/*
 * Runs tool calls in a process of its own and prints their results as JSON:
 * for a test that needs a mount only this process sees (a private mount
 * namespace). `node --import tsx runToolsScript.ts '{"root":…,"calls":[…]}'`.
 */
const { root, calls } = JSON.parse(process.argv[2]!) as { root: string; calls: Array<{ name: string; input: unknown }> };
const tools = new WorkspaceTools({ root });
const results = [];
for (const [index, { name, input }] of calls.entries()) results.push(await tools.execute({ callId: `call-${index}`, name, input }, new AbortController().signal));
process.stdout.write(JSON.stringify(results));
