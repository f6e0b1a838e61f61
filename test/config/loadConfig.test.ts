import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TurnloomError } from '../../domain/index.ts';
import { loadConfig, userConfigPath } from '../../services/config/index.ts';
import { tempDir } from '../support/tempDir.ts';

/** A config home and a workspace in a temp folder, with the files a test writes. */
function folders() {
  const root = tempDir('turnloom-config-');
  const configHome = join(root.path, 'config');
  const workspace = join(root.path, 'workspace');
  mkdirSync(join(configHome, 'turnloom'), { recursive: true });
  mkdirSync(workspace);
  const userFile = join(configHome, 'turnloom', 'config.json');
  const projectFile = join(workspace, 'turnloom.json');
  return {
    root,
    workspace,
    userFile,
    projectFile,
    env: (more: Record<string, string> = {}) => ({ XDG_CONFIG_HOME: configHome, ...more }),
    user: (content: unknown) => writeFileSync(userFile, typeof content === 'string' ? content : JSON.stringify(content, null, 2)),
    project: (content: unknown) => writeFileSync(projectFile, typeof content === 'string' ? content : JSON.stringify(content, null, 2)),
  };
}

/** The error loading throws, as its message. */
function failure(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(TurnloomError);
    expect((error as TurnloomError).code).toBe('invalid_payload');
    return (error as Error).message;
  }
  throw new Error('loading did not fail');
}

let made: Array<ReturnType<typeof folders>> = [];
afterEach(() => {
  for (const folder of made) folder.root.remove();
  made = [];
});
const setup = () => {
  const folder = folders();
  made.push(folder);
  return folder;
};

describe('loadConfig', () => {
  it('finds the user file under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(userConfigPath({ XDG_CONFIG_HOME: '/x/conf' })).toBe('/x/conf/turnloom/config.json');
    expect(userConfigPath({ XDG_CONFIG_HOME: 'relative' })).toMatch(/\.config\/turnloom\/config\.json$/);
  });

  it('is empty when there is no file', () => {
    const { workspace, env } = setup();
    expect(loadConfig({ workspace, env: env() })).toEqual({ config: {}, files: [], expanded: [], offered: [], layers: [] });
  });

  it('reads the user file and the project file, the project’s keys over the user’s', () => {
    const folder = setup();
    folder.user({ provider: 'anthropic', model: 'claude-sonnet-4-5', contextWindow: 100_000, permissions: { mode: 'full', rules: [{ tool: 'bash', pattern: 'npm test*', decision: 'allow' }] } });
    folder.project({ model: 'claude-opus-4', permissions: { rules: [{ tool: 'bash', pattern: 'git push*', decision: 'deny' }] }, agents: { plan: { mode: 'read-only' } } });
    const loaded = loadConfig({ workspace: folder.workspace, env: folder.env() });
    expect(loaded.files).toEqual([folder.userFile, folder.projectFile]);
    expect(loaded.config).toEqual({
      provider: 'anthropic',
      model: 'claude-opus-4',
      contextWindow: 100_000,
      permissions: {
        mode: 'full',
        rules: [
          { tool: 'bash', pattern: 'npm test*', decision: 'allow' },
          { tool: 'bash', pattern: 'git push*', decision: 'deny' },
        ],
      },
      agents: { plan: { mode: 'read-only' } },
    });
  });

  it('reads only the user file for a process without a workspace', () => {
    const folder = setup();
    folder.user({ model: 'a' });
    folder.project({ model: 'b' });
    expect(loadConfig({ workspace: null, env: folder.env() })).toEqual({ config: { model: 'a' }, files: [folder.userFile], expanded: [], offered: [], layers: [{ source: 'user', file: folder.userFile, config: { model: 'a' } }] });
  });

  it('refuses an allow rule in the project file, naming the file and where to put it', () => {
    const folder = setup();
    folder.project({ permissions: { rules: [{ tool: 'bash', pattern: '*', decision: 'allow' }] } });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(
      `${folder.projectFile}: permissions.rules.0: the project file may add only "ask" and "deny" rules, not "allow" (the model can edit it); put it in the user file, or pass it on the command line`,
    );
    folder.project({ permissions: { mode: 'full' } });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toMatch(/turnloom\.json: permissions\.mode: the project file may not set the permission mode/);
    // The same rule in the user file is the user's own decision.
    folder.project({});
    folder.user({ permissions: { mode: 'full', rules: [{ tool: 'bash', pattern: '*', decision: 'allow' }] } });
    expect(loadConfig({ workspace: folder.workspace, env: folder.env() }).config.permissions?.mode).toBe('full');
  });

  it('lets the project file only narrow a built-in agent, mode and tools, whatever the user file says', () => {
    const folder = setup();
    // The user's own mode is wide, so the built-in plan agent's read-only is the only bound a project can be held to.
    folder.user({ permissions: { mode: 'full' } });
    folder.project({ agents: { plan: { mode: 'ask' } } });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toMatch(
      /turnloom\.json: agents\.plan\.mode: the project file may only narrow a mode, and "ask" lets the agent do more than "read-only"/,
    );
    folder.project({ agents: { plan: { tools: ['*'] } } });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toMatch(
      /turnloom\.json: agents\.plan\.tools\.0: the project file may only narrow an agent's tools, and "\*" is not among read, list, glob, grep/,
    );
    folder.project({ agents: { explore: { tools: ['read', 'bash'] } } });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toMatch(/agents\.explore\.tools\.1: .*"bash" is not among/);
    // Narrowing stays allowed, and so does widening what the user file itself widened.
    folder.project({ agents: { plan: { mode: 'read-only', tools: ['read', 'grep'] } } });
    expect(loadConfig({ workspace: folder.workspace, env: folder.env() }).config.agents?.plan?.tools).toEqual(['read', 'grep']);
    folder.user({ agents: { plan: { mode: 'ask', tools: ['read', 'bash'] } } });
    folder.project({ agents: { plan: { mode: 'ask', tools: ['bash'] } } });
    expect(loadConfig({ workspace: folder.workspace, env: folder.env() }).config.agents?.plan?.mode).toBe('ask');
  });

  it('expands ${VAR} in MCP headers from the environment, and names one that is not set', () => {
    const folder = setup();
    folder.user({ mcp: { gh: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${GH_TOKEN}' } } } });
    const loaded = loadConfig({ workspace: folder.workspace, env: folder.env({ GH_TOKEN: 'tok-123' }) });
    expect(loaded.config.mcp).toEqual({ gh: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer tok-123' } } });
    expect(loaded.expanded).toEqual(['Bearer tok-123']);
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.userFile}: mcp.gh.headers.Authorization: the environment variable GH_TOKEN is not set`);
  });

  it('takes comments and trailing commas in both files', () => {
    const folder = setup();
    folder.user('// mine\n{\n  "model": "m", /* the one I use */\n  "permissions": { "mode": "full", },\n}\n');
    folder.project('{\n  // the repository\'s\n  "agent": "plan",\n}');
    expect(loadConfig({ workspace: folder.workspace, env: folder.env() }).config).toEqual({ model: 'm', permissions: { mode: 'full' }, agent: 'plan' });
  });

  it('keeps "__proto__" a key, as JSON.parse does: refused as unknown, never the prototype', () => {
    const folder = setup();
    folder.project('{ "__proto__": { "permissions": { "mode": "full" } } }');
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.projectFile}: unknown key "__proto__"`);
  });

  it('says where a file is not JSON, as file:line:column, without quoting it', () => {
    const folder = setup();
    folder.project('{\n  "model": "x",\n    "sk-secret-value-1234"\n}\n');
    const message = failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }));
    expect(message).toBe(`${folder.projectFile}:4:1: not valid JSON: colon expected`);
    expect(message).not.toContain('sk-secret');
    folder.project('{\n  "a": 1\n  "b": 2\n}\n');
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.projectFile}:3:3: not valid JSON: comma expected`);
    folder.project('');
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.projectFile}: the file is empty ({} is an empty configuration)`);
    folder.project('{"model": ');
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toMatch(/turnloom\.json:1:11: not valid JSON: it ends too soon \(value expected\)$/);
  });

  it('takes .mcp.json as strict JSON, as the other tools that read it do', () => {
    const folder = setup();
    writeFileSync(join(folder.workspace, '.mcp.json'), '{\n  // servers\n  "mcpServers": {}\n}');
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${join(folder.workspace, '.mcp.json')}:2:3: not valid JSON: invalid comment token`);
  });

  it('names the file and the key of a schema mistake', () => {
    const folder = setup();
    folder.user({ agents: { plan: { mode: 'yolo' } } });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.userFile}: agents.plan.mode: must be one of ask, auto-edits, full, read-only`);
    folder.user({ foo: 1 });
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.userFile}: unknown key "foo"`);
  });

  it('checks names across the files once they are merged', () => {
    const folder = setup();
    folder.user({ providers: { local: { kind: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1', apiKeyEnv: 'LOCAL_KEY' } } });
    folder.project({ provider: 'local', providers: { local: { model: 'qwen' } } });
    expect(loadConfig({ workspace: folder.workspace, env: folder.env() }).config.providers).toEqual({ local: { kind: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1', apiKeyEnv: 'LOCAL_KEY', model: 'qwen' } });
    folder.user({});
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(
      `${folder.userFile} + ${folder.projectFile}: providers.local.kind: is required for a provider that is not built in (scripted, anthropic, openai-chat, openai-responses): one of anthropic, openai-chat, openai-responses`,
    );
  });

  it('says a config path that is a folder is one', () => {
    const folder = setup();
    mkdirSync(folder.projectFile);
    expect(failure(() => loadConfig({ workspace: folder.workspace, env: folder.env() }))).toBe(`${folder.projectFile}: is a folder, not a file`);
  });
});
