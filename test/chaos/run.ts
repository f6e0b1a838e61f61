// `npm run chaos [-- --turns N --seconds S --seed N --engines N --nats-nodes N --no-delegate --json --dump DIR]`: see chaos.ts.
import { parseArgs } from 'node:util';
import { runChaos } from './chaos.ts';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '30' },
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    engines: { type: 'string', default: '1' },
    'nats-nodes': { type: 'string', default: '1' },
    'no-delegate': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    dump: { type: 'string' },
  },
});
const number = (name: string, text: string | undefined, max: number) => {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    console.error(`chaos: --${name} must be a whole number from 1 to ${max}, not "${text}"`);
    process.exit(2);
  }
  return value;
};
const options = {
  turns: number('turns', values.turns, 1_000),
  seconds: number('seconds', values.seconds, 3_600),
  seed: number('seed', values.seed, 2 ** 31),
  engines: number('engines', values.engines, 9),
  natsNodes: number('nats-nodes', values['nats-nodes'], 5),
  delegate: !values['no-delegate'],
  ...(values.dump ? { dumpDir: values.dump } : {}),
};
const report = await runChaos({ ...options, ...(values.json ? {} : { log: (line: string) => console.log(`  ${line}`) }) });
if (values.json) console.log(JSON.stringify(report, null, 2));
else {
  console.log(
    `chaos run (seed ${report.seed}): ${report.turns} turns, ${report.seconds} s, ${report.engines} engine${report.engines > 1 ? 's (a cluster)' : ''}, ${report.natsNodes} nats-server${report.natsNodes > 1 ? 's' : ''}; killed workers ${report.kills.worker}×, engines ${report.kills.engine}×, nats-servers ${report.kills.nats}×`,
  );
  console.log(`started ${report.started} (and ${report.children} sub-agent turns), completed ${report.completed}, failed ${report.failed}, interrupted ${report.interrupted}, resumed ${report.resumes}×`);
  for (const [reason, count] of Object.entries(report.failures)) console.log(`  failed ${count}×: ${reason}`);
  console.log(`stuck ${report.stuck}, lost ${report.lost}, duplicated ${report.duplicated}; the longest an API request waited: ${report.longestWaitMs} ms`);
}
process.exitCode = report.stuck + report.lost + report.duplicated === 0 ? 0 : 1;
