import { mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ScriptedProvider } from '../adapters/providers/scriptedProvider.ts';
import { UsageError, parseOptions } from './cliErrors.ts';
import { dataHome } from './dataHome.ts';
import { terminalJson } from './terminalText.ts';
import { readScriptFile } from './providerRegistry.ts';
import { demoPrompt, loginRaceScript, writeLoginRaceProject } from './demo/loginRaceProject.ts';
import { runEmbedded } from './run/embeddedRun.ts';
import { changesOf, summaryLines } from './run/runSummary.ts';
import { paint, wantsColour } from './colours.ts';
import { printStyled } from './redact.ts';
import { tempFolder } from './tempFolder.ts';
import { workspaceSetup } from './workspaceSetup.ts';
import { demoUsage } from './commandUsage.ts';


/**
 * The main job on embedded defaults, as the seeds tell it: a project with a
 * real race in its login and a failing test; the agent reads the code, asks
 * to run the tests (the demo allows it, visibly), edits the file, runs the
 * tests again and finishes; then the turn's diff from its checkpoint.
 */
export async function demoCommand(args: string[]): Promise<number> {
  const { values } = parseOptions('demo', {
    args,
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      prompt: { type: 'string', default: demoPrompt },
      data: { type: 'string' },
      dir: { type: 'string' },
      deny: { type: 'boolean', default: false },
      script: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(demoUsage);
    return 0;
  }
  const script = values.script ? readScriptFile(values.script) : loginRaceScript;
  const dataDir = values.data === undefined ? join(dataHome(), 'demo') : resolve(values.data);
  const scratch = values.dir === undefined ? tempFolder('turnloom-demo-') : null;
  const projectDir = values.dir === undefined ? scratch!.path : resolve(values.dir);
  try {
    mkdirSync(projectDir, { recursive: true });
    if (readdirSync(projectDir).length > 0) throw new UsageError(`demo: --dir ${projectDir} is not empty; give a new or empty folder`);
    writeLoginRaceProject(projectDir);
    const workspace = await workspaceSetup('demo', '--dir', projectDir, dataDir);
    if (workspace.isolationWarning) console.warn(`turnloom: ${workspace.isolationWarning}`);
    const report = await runEmbedded({
      prompt: values.prompt!,
      workspace,
      dataDir,
      threadId: null,
      providers: { scripted: new ScriptedProvider(script) },
      provider: { name: 'scripted', model: null },
      policy: values.deny ? 'deny' : 'auto',
      // Edits run, commands ask: the test runs are what a person approves.
      mode: 'auto-edits',
      view: values.json ? null : { out: process.stdout, tty: process.stdout.isTTY === true, colour: wantsColour(process.stdout) },
      input: process.stdin,
      prompts: values.json ? process.stderr : process.stdout,
      onStarted: () => {
        if (!values.json) console.log(`turnloom demo — in-process bus, data in ${dataDir}, scripted provider, project in ${projectDir}\n\n> ${values.prompt}`);
      },
    });
    if (values.json) {
      const { threadId, title, status, approvals, toolCalls, checkpoint, events } = report;
      console.log(terminalJson({ threadId, title, status, approvals, toolCalls, checkpoint: checkpoint && { ...changesOf(checkpoint), summary: checkpoint.summary }, events }));
    } else {
      printStyled(summaryLines(report, paint(wantsColour(process.stdout)), { diff: true }).join('\n'));
      console.log(`recorded ${report.events} events in ${dataDir}`);
    }
    return report.status === 'completed' ? 0 : 1;
  } finally {
    scratch?.remove();
  }
}
