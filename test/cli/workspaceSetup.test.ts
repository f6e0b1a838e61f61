import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dataHome } from '../../cli/dataHome.ts';
import { workspaceSetup } from '../../cli/workspaceSetup.ts';
import { type Folder, plainFolder } from './runFixtures.ts';

let made: Folder[] = [];
afterEach(() => {
  for (const folder of made.splice(0)) folder.remove();
});
const folder = (): Folder => {
  const one = plainFolder();
  made.push(one);
  return one;
};

describe('the workspace a command of the CLI works in', () => {
  it('hides the data folder, turnloom’s XDG data home and the secret files it is given (an auth file, NATS credentials)', async () => {
    const workspace = folder();
    const secrets = folder();
    const data = join(secrets.path, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'data.mdb'), 'threads');
    const creds = join(secrets.path, 'worker.creds');
    writeFileSync(creds, 'SUAM-the-seed');
    // The tests' own XDG data home (test/globalSetup.ts), never the user's.
    expect(dataHome()).toContain('turnloom-xdg-');
    mkdirSync(dataHome(), { recursive: true });
    writeFileSync(join(dataHome(), 'other-workspace.mdb'), 'other threads');
    const setup = await workspaceSetup('worker', '--workspace', workspace.path, data, [creds]);
    expect(setup.isolationWarning).toBeNull();
    const { output } = await setup.tools.execute({ callId: 'c', name: 'bash', input: { command: `cat ${creds} ${data}/* ${dataHome()}/*; true` } }, new AbortController().signal);
    for (const secret of ['SUAM-the-seed', 'threads']) expect(output).not.toContain(secret);
  });
});
