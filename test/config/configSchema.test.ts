import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSchema, mergeConfigs, projectFileRefusal, type TurnloomConfig } from '../../services/config/index.ts';
import { configIssueLine } from '../../services/config/configIssues.ts';
import { configReferenceProblem } from '../../services/config/configReferences.ts';
import { expandVariables, MissingVariable } from '../../services/config/expandVariables.ts';

/** The one line a config file's content gets, or `null` when the schema takes it. */
function problemOf(raw: unknown): string | null {
  const parsed = configSchema.safeParse(raw);
  return parsed.success ? null : configIssueLine(parsed.error);
}

describe('the configuration schema', () => {
  it('takes a full configuration', () => {
    const full = {
      $schema: './node_modules/turnloom/docs/config.schema.json',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      providers: {
        anthropic: { apiKeyEnv: 'WORK_ANTHROPIC_KEY', model: 'claude-opus-4', contextWindow: 200_000 },
        local: { kind: 'openai-chat', baseUrl: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'OLLAMA_KEY', model: 'qwen3-coder' },
      },
      agent: 'build',
      agents: { review: { description: 'reviews', instructions: 'Review.', provider: 'local', mode: 'read-only', rules: [{ tool: 'bash', pattern: 'git diff*', decision: 'allow' }], tools: ['read', 'grep', 'everything__*'] } },
      permissions: { mode: 'ask', rules: [{ tool: 'bash', pattern: 'npm test*', decision: 'allow', match: 'wildcard' }] },
      mcp: {
        everything: { command: 'node', args: ['server.js'], env: { K: 'V', TOKEN: '${MY_TOKEN}' }, cwd: 'tools', timeoutMs: 60_000, enabled: true },
        remote: { url: 'http://127.0.0.1:3000/mcp', headers: { Authorization: 'Bearer ${MY_TOKEN}' }, timeoutMs: 60_000, enabled: false },
      },
      contextWindow: 128_000,
      compaction: { auto: true, keepRecentTurns: 2, maxPerTurn: 1 },
    };
    expect(problemOf(full)).toBeNull();
    expect(problemOf({})).toBeNull();
  });

  it('names the key and what is allowed there, never the value found', () => {
    expect(problemOf({ agents: { plan: { mode: 'yolo' } } })).toBe('agents.plan.mode: must be one of ask, auto-edits, full, read-only');
    expect(problemOf({ foo: 1 })).toBe('unknown key "foo"');
    expect(problemOf({ permissions: { rules: [{ tool: 'bash', pattern: 'x', decision: 'allow', extra: true }] } })).toBe('permissions.rules.0: unknown key "extra"');
    expect(problemOf({ contextWindow: 'big' })).toBe('contextWindow: must be a number');
    expect(problemOf({ contextWindow: 10 })).toBe('contextWindow: must be at least 1000');
    expect(problemOf({ compaction: { auto: 'yes' } })).toBe('compaction.auto: must be a boolean');
    expect(problemOf({ permissions: { rules: [{ tool: 'bash', pattern: 'x' }] } })).toBe('permissions.rules.0.decision: must be one of allow, ask, deny');
    expect(problemOf({ mcp: { 'bad name!': { command: 'x' } } })).toBe('mcp.bad name!: must be 1-32 letters, digits, "_" or "-"');
    expect(problemOf({ mcp: { x: { command: 'node', headers: {} } } })).toBe('mcp.x: unknown key "headers"');
    expect(problemOf({ mcp: { x: { url: 'ftp://example.com' } } })).toBe('mcp.x.url: must be an http:// or https:// URL');
    expect(problemOf({ providers: { anthropic: { baseUrl: 'not a url' } } })).toBe('providers.anthropic.baseUrl: must be an http:// or https:// URL');
  });

  it('refuses secrets written out, and says to name a variable instead', () => {
    const key = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz';
    const apiKey = problemOf({ providers: { anthropic: { apiKey: key } } })!;
    expect(apiKey).toBe('providers.anthropic: "apiKey" would hold a secret: put it in an environment variable and name the variable in "apiKeyEnv"');
    const keyAsVariable = problemOf({ providers: { anthropic: { apiKeyEnv: key } } })!;
    expect(keyAsVariable).toBe('providers.anthropic.apiKeyEnv: must be the name of an environment variable (like ANTHROPIC_API_KEY), not the key itself');
    const header = problemOf({ mcp: { gh: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer abc123def456' } } } })!;
    expect(header).toMatch(/^mcp\.gh\.headers\.Authorization: looks like a secret written out: put it in an environment variable and write \$\{VARIABLE\} here$/);
    expect(problemOf({ mcp: { x: { command: 'node', env: { OPENAI_API_KEY: key } } } })).toMatch(/^mcp\.x\.env\.OPENAI_API_KEY: looks like a secret/);
    expect(problemOf({ mcp: { gh: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${GH_TOKEN}', 'X-Team': 'core' } } } })).toBeNull();
    for (const line of [apiKey, keyAsVariable, header]) expect(line).not.toContain('abc');
  });

  it('describes every key, so the generated reference leaves none out', () => {
    const undescribed: string[] = [];
    const walk = (schema: Record<string, unknown>, path: string) => {
      for (const [key, child] of Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        if (typeof child.description !== 'string' || child.description === '') undescribed.push(`${path}${key}`);
        walk(child, `${path}${key}.`);
      }
      for (const branch of (schema.anyOf ?? []) as Array<Record<string, unknown>>) walk(branch, path);
      if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties as Record<string, unknown>, `${path}<name>.`);
      if (typeof schema.items === 'object') walk(schema.items as Record<string, unknown>, `${path}[].`);
    };
    walk(z.toJSONSchema(configSchema, { io: 'input' }) as Record<string, unknown>, '');
    expect(undescribed).toEqual([]);
  });

  it('takes the examples docs/config.md shows', () => {
    const doc = readFileSync(fileURLToPath(new URL('../../docs/config.md', import.meta.url)), 'utf8');
    const examples = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1]!) as unknown);
    expect(examples).toHaveLength(2);
    for (const example of examples) expect(problemOf(example)).toBeNull();
    expect(projectFileRefusal(examples[1] as TurnloomConfig, examples[0] as TurnloomConfig)).toBeNull();
  });
});

describe('merging the user file and the project file', () => {
  const user: TurnloomConfig = {
    provider: 'anthropic',
    agents: { plan: { mode: 'ask', instructions: 'user plan', tools: ['read', 'grep'] }, mine: { description: 'only mine' } },
    permissions: { mode: 'auto-edits', rules: [{ tool: 'bash', pattern: 'npm test*', decision: 'allow' }] },
    mcp: { a: { command: 'node', args: ['a.js', '--x'] } },
  };
  const project: TurnloomConfig = {
    model: 'claude-opus-4',
    agents: { plan: { mode: 'read-only', tools: ['read'] } },
    permissions: { rules: [{ tool: 'bash', pattern: 'git push*', decision: 'deny' }] },
    mcp: { a: { command: 'node', args: ['b.js'] } },
  };

  it('merges objects key by key, replaces lists and adds up permission rules', () => {
    const merged = mergeConfigs(user, project);
    expect(merged.provider).toBe('anthropic');
    expect(merged.model).toBe('claude-opus-4');
    expect(merged.agents).toEqual({ plan: { mode: 'read-only', instructions: 'user plan', tools: ['read'] }, mine: { description: 'only mine' } });
    expect(merged.permissions).toEqual({
      mode: 'auto-edits',
      rules: [
        { tool: 'bash', pattern: 'npm test*', decision: 'allow' },
        { tool: 'bash', pattern: 'git push*', decision: 'deny' },
      ],
    });
    expect(merged.mcp).toEqual({ a: { command: 'node', args: ['b.js'] } });
    // Pure: neither file's content changed.
    expect(user.agents!.plan!.tools).toEqual(['read', 'grep']);
    expect(user.permissions!.rules).toHaveLength(1);
  });

  it('adds up an agent’s rules too', () => {
    const merged = mergeConfigs({ agents: { x: { rules: [{ tool: '*', pattern: '*', decision: 'ask' }] } } }, { agents: { x: { rules: [{ tool: 'bash', pattern: 'rm*', decision: 'deny' }] } } });
    expect(merged.agents!.x!.rules).toHaveLength(2);
  });
});

describe('what the project file may not say', () => {
  it('lets it add ask and deny rules and narrow a mode', () => {
    expect(projectFileRefusal({ permissions: { rules: [{ tool: 'bash', pattern: 'x', decision: 'deny' }, { tool: '*', pattern: 'y', decision: 'ask' }] } }, {})).toBeNull();
    expect(projectFileRefusal({ agents: { plan: { mode: 'read-only' } } }, {})).toBeNull();
    expect(projectFileRefusal({ agents: { build: { mode: 'auto-edits' } } }, { permissions: { mode: 'full' } })).toBeNull();
    // plan is read-only of its own: a wide user mode does not let the project widen it.
    expect(projectFileRefusal({ agents: { plan: { mode: 'auto-edits' } } }, { permissions: { mode: 'full' } })?.path).toBe('agents.plan.mode');
  });

  it('refuses an allow rule, the permission mode, a wider agent mode and a redirected key', () => {
    expect(projectFileRefusal({ permissions: { rules: [{ tool: 'bash', pattern: 'x', decision: 'deny' }, { tool: 'bash', pattern: '*', decision: 'allow' }] } }, {})).toEqual({
      path: 'permissions.rules.1',
      message: 'the project file may add only "ask" and "deny" rules, not "allow" (the model can edit it); put it in the user file, or pass it on the command line',
    });
    expect(projectFileRefusal({ permissions: { mode: 'read-only' } }, {})?.path).toBe('permissions.mode');
    expect(projectFileRefusal({ agents: { x: { rules: [{ tool: 'bash', pattern: '*', decision: 'allow' }] } } }, {})?.path).toBe('agents.x.rules.0');
    expect(projectFileRefusal({ agents: { build: { mode: 'full' } } }, {})?.message).toMatch(/may only narrow a mode, and "full" lets the agent do more than "ask"/);
    expect(projectFileRefusal({ agents: { build: { mode: 'full' } } }, { agents: { build: { mode: 'auto-edits' } } })?.path).toBe('agents.build.mode');
    expect(projectFileRefusal({ providers: { anthropic: { baseUrl: 'https://example.com' } } }, {})?.path).toBe('providers.anthropic.baseUrl');
    expect(projectFileRefusal({ providers: { x: { kind: 'openai-chat', apiKeyEnv: 'ANTHROPIC_API_KEY' } } }, {})?.path).toBe('providers.x.apiKeyEnv');
  });
});

describe('names one file gives and the other uses', () => {
  it('wants a kind for a new provider, and known names for the defaults', () => {
    expect(configReferenceProblem({ providers: { local: { model: 'm' } } })?.path).toBe('providers.local.kind');
    expect(configReferenceProblem({ providers: { anthropic: { kind: 'openai-chat' } } })?.path).toBe('providers.anthropic.kind');
    expect(configReferenceProblem({ provider: 'nope' })).toEqual({ path: 'provider', message: 'no provider "nope": the providers are scripted, anthropic, openai-chat, openai-responses' });
    expect(configReferenceProblem({ provider: 'local', providers: { local: { kind: 'openai-chat' } } })).toBeNull();
    expect(configReferenceProblem({ agent: 'review' })?.path).toBe('agent');
    expect(configReferenceProblem({ agent: 'review', agents: { review: {} } })).toBeNull();
    expect(configReferenceProblem({ agents: { review: { provider: 'other' } } })?.path).toBe('agents.review.provider');
  });
});

describe('${VAR} in MCP args, env and headers', () => {
  it('takes the values from the environment, and names a variable that is not set', () => {
    const config: TurnloomConfig = {
      mcp: {
        a: { command: 'node', args: ['server.js', '--token=${A_TOKEN}'], env: { TOKEN: '${A_TOKEN}', PLAIN: 'x ${NOT_EXPANDED' } },
        b: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${B_TOKEN}' } },
        off: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${UNSET_BUT_OFF}' }, enabled: false },
      },
    };
    const { config: expanded, expanded: values } = expandVariables(config, { A_TOKEN: 'aaa', B_TOKEN: 'bbb' });
    expect(expanded.mcp).toEqual({
      a: { command: 'node', args: ['server.js', '--token=aaa'], env: { TOKEN: 'aaa', PLAIN: 'x ${NOT_EXPANDED' } },
      b: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer bbb' } },
      off: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${UNSET_BUT_OFF}' }, enabled: false },
    });
    expect(values).toEqual(['--token=aaa', 'aaa', 'Bearer bbb']);
    expect(() => expandVariables(config, { A_TOKEN: 'aaa' })).toThrow(new MissingVariable('mcp.b.headers.Authorization', 'B_TOKEN'));
    expect(() => expandVariables(config, { A_TOKEN: 'aaa' })).toThrow('mcp.b.headers.Authorization: the environment variable B_TOKEN is not set');
    expect(() => expandVariables(config, { B_TOKEN: 'bbb' })).toThrow(new MissingVariable('mcp.a.args.1', 'A_TOKEN'));
  });

  it('refuses a token written out in an argument, as in env and headers', () => {
    const parsed = configSchema.safeParse({ mcp: { gh: { command: 'npx', args: ['-y', 'gh-mcp', '--token', `ghp_${'x'.repeat(36)}`] } } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ path: ['mcp', 'gh', 'args', 3], message: expect.stringContaining('looks like a secret written out') });
  });
});
