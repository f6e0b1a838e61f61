/**
 * A process running the workspace tools, as a worker does: it runs `command`
 * in `root` with keepRunning for a turn, prints the result, then either
 * exits (`exit`) or runs `next` too (`then`), which a test kills it in.
 * Arguments: root, isolate (true|false), command, exit|then, [next].
 */
import { WorkspaceTools } from '../../adapters/tools/index.ts';

const [root, isolate, command, after, next] = process.argv.slice(2);
const tools = new WorkspaceTools({ root: root!, isolate: isolate === 'true' });
const signal = new AbortController().signal;
const kept = await tools.execute({ callId: 'kept', name: 'bash', input: { command, keepRunning: true } }, signal, 'turn-1');
process.stdout.write(`${kept.output}\n`);
if (after === 'exit') process.exit(0);
await tools.execute({ callId: 'next', name: 'bash', input: { command: next } }, signal, 'turn-1');
