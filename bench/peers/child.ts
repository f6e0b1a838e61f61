/**
 * One contender in a process of its own, for what must be seen from outside
 * it: `turns` runs K one-turn threads and says how many bytes its data then
 * takes (the parent counts its syncs with strace); `kill` starts a turn and
 * says how far it got, for the parent to kill -9 it; `recover` opens the
 * killed process's data and carries on. It speaks in lines on stdout.
 */
import { contenderByKey } from './contenders.ts';
import { KILL_CHUNK_DELAY_MS, KILL_TOOL_MS, countedTool, timedWorkload } from './workload.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main([mode, key, dir, ...rest]: string[]): Promise<void> {
  const contender = contenderByKey(key!);
  if (mode === 'turns') {
    const session = await contender.open(dir!, timedWorkload);
    for (let n = 0; n < Number(rest[0]); n++) await session.turn(await session.newThread());
    await session.close();
    say(JSON.stringify({ bytes: contender.dataBytes(dir!) }));
  } else if (mode === 'kill') {
    const [toolLog, phase] = rest;
    const session = await contender.open(dir!, {
      chunkDelayMs: phase === 'stream' ? KILL_CHUNK_DELAY_MS : 0,
      tool: countedTool(toolLog!, KILL_TOOL_MS, () => say('tool')),
      onStreamed: (chars) => say(`streamed ${chars}`),
    });
    const thread = await session.newThread();
    say(`thread ${thread}`);
    await session.turn(thread);
    say('done');
  } else if (mode === 'recover') {
    const [toolLog, thread] = rest;
    const session = await contender.open(dir!, { chunkDelayMs: 0, tool: countedTool(toolLog!, KILL_TOOL_MS) });
    const recovery = await session.recover(thread!);
    await session.close();
    say(JSON.stringify(recovery));
  } else throw new Error(`unknown mode ${mode}`);
}

await main(process.argv.slice(2));
// Whatever a library leaves scheduled, the child's work is done and said.
process.exit(0);
