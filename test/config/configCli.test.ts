import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { type RecordedStreamServer, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { CLI_DEADLINE_MS, expectOneLineFailure, runCli, startCli } from '../cli/runCli.ts';
import { chatText, run } from '../cli/runFixtures.ts';
import { tempDir } from '../support/tempDir.ts';

/**
 * The configuration files as the commands read them, in real processes: a
 * mistake in either is one line naming the file and the key, exit 2, for
 * every command that reads them; what they set is what `run` uses, unless
 * a flag says otherwise.
 */
describe('turnloom with configuration files', () => {
  const root = tempDir('turnloom-config-cli-');
  afterAll(() => root.remove());
  let count = 0;
  /** A fresh config home and workspace, with the user file and project file given (a string as written). */
  const folders = (files: { user?: unknown; project?: unknown } = {}) => {
    const base = join(root.path, String(count++));
    const configHome = join(base, 'config');
    const workspace = join(base, 'workspace');
    mkdirSync(join(configHome, 'turnloom'), { recursive: true });
    mkdirSync(workspace, { recursive: true });
    const write = (path: string, content: unknown) => writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    if (files.user !== undefined) write(join(configHome, 'turnloom', 'config.json'), files.user);
    if (files.project !== undefined) write(join(workspace, 'turnloom.json'), files.project);
    return { workspace, env: { XDG_CONFIG_HOME: configHome } };
  };

  const commands: Array<{ name: string; args: (workspace: string) => string[] }> = [
    { name: 'run', args: (workspace) => ['run', 'hello', '--cwd', workspace, '--json'] },
    { name: 'serve', args: (workspace) => ['serve', '--workspace', workspace] },
    { name: 'worker', args: (workspace) => ['worker', '--nats', inject('natsUrl'), '--workspace', workspace] },
  ];
  const mistakes: Array<{ name: string; file: 'user' | 'project'; content: unknown; says: RegExp }> = [
    { name: 'an unknown key', file: 'project', content: { provders: {} }, says: /turnloom\.json: unknown key "provders"$/ },
    { name: 'a wrong type', file: 'user', content: { agents: { plan: { mode: 'yolo' } } }, says: /turnloom\/config\.json: agents\.plan\.mode: must be one of ask, auto-edits, full, read-only$/ },
    { name: 'invalid JSON', file: 'project', content: '{\n  "model": "x",\n  ]\n', says: /turnloom\.json:3:3: not valid JSON: property name expected$/ },
    // A key written into the file by mistake sits near the error: the line says where, never what.
    { name: 'invalid JSON beside a secret', file: 'user', content: '// mine\n{\n  "model": "sk-live-0123456789abcdef"\n  "agent": "plan",\n}\n', says: /turnloom\/config\.json:4:3: not valid JSON: comma expected$/ },
    { name: 'an allow rule in the project file', file: 'project', content: { permissions: { rules: [{ tool: 'bash', pattern: '*', decision: 'allow' }] } }, says: /turnloom\.json: permissions\.rules\.0: the project file may add only "ask" and "deny" rules/ },
  ];
  for (const command of commands) {
    for (const mistake of mistakes) {
      it(`${command.name}: ${mistake.name} is one line and exit 2`, async () => {
        const { workspace, env } = folders({ [mistake.file]: mistake.content });
        const result = await runCli(command.args(workspace), { cwd: workspace, env });
        expectOneLineFailure(result, mistake.says);
        expect(result.code).toBe(2);
        expect(result.stderr).not.toContain('sk-live');
      });
    }
  }

  it('serve --no-worker reads only the user file', async () => {
    const bad = folders({ user: { foo: 1 } });
    expectOneLineFailure(await runCli(['serve', '--no-worker'], { cwd: bad.workspace, env: bad.env }), /config\.json: unknown key "foo"$/);
    // A broken project file is no concern of an engine without a workspace: it starts, and is stopped.
    const { workspace, env } = folders({ project: '{ broken' });
    const serving = startCli(['serve', '--no-worker', '--data', join(workspace, '..', 'data')], { cwd: workspace, env, deadlineMs: CLI_DEADLINE_MS });
    for (const deadline = Date.now() + CLI_DEADLINE_MS; !serving.stdout().includes('no local worker') && serving.child.exitCode === null && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    serving.child.kill('SIGTERM');
    const result = await serving.exited;
    expect(result.stdout, result.stderr).toContain('no local worker');
    expect(result.stderr).not.toContain('turnloom.json');
  });

  describe('the default provider and model', () => {
    let server: RecordedStreamServer | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });
    /** The models the turn's calls asked for (side work, such as the title, offers no tools). */
    const turnModels = () => server!.requests.map((request) => request.body as { model: string; tools?: unknown }).filter((body) => body.tools !== undefined).map((body) => body.model);

    it('come from the configuration, and a flag overrides them', async () => {
      server = await serveRecordedStream('openai-chat', [{ kind: 'stream', chunks: chatText('done') }]);
      const { workspace, env } = folders({
        user: { provider: 'local', model: 'model-from-user', providers: { local: { kind: 'openai-chat', baseUrl: server.baseURL, apiKeyEnv: 'LOCAL_TEST_KEY' } } },
        project: { model: 'model-from-project' },
      });
      const runEnv = { ...env, LOCAL_TEST_KEY: 'local-test-key-0123456789' };
      const first = await run(['run', 'hello', '--cwd', workspace, '--approve', 'deny'], { cwd: workspace, env: runEnv });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain('turnloom run — local (model-from-project)');
      expect(first.stderr).toMatch(/config: .*config\.json, .*turnloom\.json/);
      expect(turnModels()).toEqual(['model-from-project']);

      const flagged = await run(['run', 'hello', '--cwd', workspace, '--model', 'model-from-flag', '--json'], { cwd: workspace, env: runEnv });
      expect(flagged.code, flagged.stderr).toBe(0);
      expect(turnModels()).toEqual(['model-from-project', 'model-from-flag']);

      const scripted = await run(['run', 'hello', '--cwd', workspace, '--provider', 'scripted', '--approve', 'deny'], { cwd: workspace, env: runEnv });
      expect(scripted.code, scripted.stderr).toBe(0);
      expect(scripted.stderr).toContain('turnloom run — scripted');
      expect(turnModels()).toHaveLength(2);
    });

    it('come from a user file with comments and trailing commas', async () => {
      const { workspace, env } = folders({ user: '// my defaults\n{\n  "provider": "scripted", /* no key needed */\n  "model": "from-jsonc",\n}\n' });
      const result = await run(['run', 'hello', '--cwd', workspace, '--approve', 'deny'], { cwd: workspace, env });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('turnloom run — scripted (from-jsonc)');
    });

    it('TURNLOOM_MODEL beats the files, and the scripted provider takes a configured model', async () => {
      const { workspace, env } = folders({ user: { provider: 'scripted', model: 'from-config' } });
      const configured = await run(['run', 'hello', '--cwd', workspace, '--approve', 'deny'], { cwd: workspace, env });
      expect(configured.code, configured.stderr).toBe(0);
      expect(configured.stderr).toContain('turnloom run — scripted (from-config)');
      const fromEnv = await run(['run', 'hello', '--cwd', workspace, '--approve', 'deny'], { cwd: workspace, env: { ...env, TURNLOOM_MODEL: 'from-env' } });
      expect(fromEnv.stderr).toContain('turnloom run — scripted (from-env)');
    });

    it('a configured provider whose key variable is not set is one line naming the variable', async () => {
      const { workspace, env } = folders({ user: { provider: 'local', providers: { local: { kind: 'openai-chat', apiKeyEnv: 'UNSET_TEST_KEY' } } } });
      const result = await runCli(['run', 'hello', '--cwd', workspace], { cwd: workspace, env });
      expectOneLineFailure(result, /config\.json: provider: provider "local" is not configured: it needs UNSET_TEST_KEY/);
      expect(result.code).toBe(2);
    });
  });
});
