import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';
import { expectOneLineFailure, runCli } from './runCli.ts';

const secret = 'sk-live-do-not-print-0123456789';
const tokenValue = 'gh-token-do-not-print-9876';

/** `turnloom config` in a real process, with a user file (JSONC) and a project file of its own. */
describe('turnloom config', () => {
  const root = tempDir('turnloom-config-command-');
  afterAll(() => root.remove());
  const configHome = join(root.path, 'config');
  const workspace = join(root.path, 'workspace');
  const userFile = join(configHome, 'turnloom', 'config.json');
  const projectFile = join(workspace, 'turnloom.json');
  mkdirSync(join(configHome, 'turnloom'), { recursive: true });
  mkdirSync(workspace);
  writeFileSync(
    userFile,
    `// mine
{
  "model": "from-user", /* replaced by the project's */
  "permissions": { "mode": "auto-edits", "rules": [{ "tool": "bash", "pattern": "npm test*", "decision": "allow" }] },
  "providers": { "local": { "kind": "openai-chat", "baseUrl": "http://127.0.0.1:11434/v1", "apiKeyEnv": "LOCAL_SECRET_KEY" } },
  "mcp": { "gh": { "url": "https://mcp.example/", "headers": { "Authorization": "Bearer \${GH_TOKEN}" } } },
}
`,
  );
  writeFileSync(projectFile, JSON.stringify({ model: 'from-project', permissions: { rules: [{ tool: 'bash', pattern: 'git push*', decision: 'deny' }] } }));
  const env = { XDG_CONFIG_HOME: configHome, LOCAL_SECRET_KEY: secret, GH_TOKEN: tokenValue, OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1' };

  it('shows each value with where it came from, keys by their names only', async () => {
    const result = await runCli(['config', '--cwd', workspace], { cwd: root.path, env });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines).toContain(`model = "from-project"  (project file ${projectFile})`);
    expect(lines).toContain(`permissions.mode = "auto-edits"  (user file ${userFile})`);
    expect(lines).toContain(`permissions.rules.0 = {"tool":"bash","pattern":"npm test*","decision":"allow"}  (user file ${userFile})`);
    expect(lines).toContain(`permissions.rules.1 = {"tool":"bash","pattern":"git push*","decision":"deny"}  (project file ${projectFile})`);
    expect(lines).toContain(`providers.local.apiKeyEnv = "LOCAL_SECRET_KEY"  (user file ${userFile})`);
    expect(lines).toContain(`mcp.gh.headers.Authorization = "***\${GH_TOKEN}"  (user file ${userFile})`);
    expect(lines).toContain('providers.openai-chat.baseUrl = "http://127.0.0.1:8080/v1"  (environment OPENAI_BASE_URL)');
    expect(lines).toContain('agent = "build"  (default)');
    for (const hidden of [secret, tokenValue]) expect(result.stdout + result.stderr).not.toContain(hidden);
  });

  it('--json says the same for a program', async () => {
    const result = await runCli(['config', '--cwd', workspace, '--json'], { cwd: root.path, env });
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as { files: { user: { path: string; read: boolean } }; values: Array<{ path: string[]; value: unknown; source: unknown }> };
    expect(report.files.user).toEqual({ path: userFile, read: true });
    expect(report.values).toContainEqual({ path: ['model'], value: 'from-project', source: { kind: 'project', file: projectFile } });
    expect(report.values).toContainEqual({ path: ['permissions', 'mode'], value: 'auto-edits', source: { kind: 'user', file: userFile } });
    for (const hidden of [secret, tokenValue]) expect(result.stdout + result.stderr).not.toContain(hidden);
  });

  it('a broken user file is one line saying file:line:column, without its content, and exit 2', async () => {
    const brokenHome = join(root.path, 'broken');
    mkdirSync(join(brokenHome, 'turnloom'), { recursive: true });
    writeFileSync(join(brokenHome, 'turnloom', 'config.json'), `{\n  // a key pasted by mistake\n  "model": "${secret}"\n  "agent": "plan"\n}\n`);
    const result = await runCli(['config', '--cwd', workspace], { cwd: root.path, env: { ...env, XDG_CONFIG_HOME: brokenHome } });
    expectOneLineFailure(result, /^turnloom: \S+\/broken\/turnloom\/config\.json:4:3: not valid JSON: comma expected$/);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain(secret);
  });
});
