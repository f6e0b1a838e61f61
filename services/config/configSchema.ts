import { z } from 'zod';
import { type PermissionMode, permissionModes } from '../../domain/index.ts';
import { looksLikeSecret } from './secretLiterals.ts';

/**
 * The configuration file's shape, for the user file and the project file
 * alike (`loadConfig.ts` says where they are and how they combine). Every
 * object is strict, so a misspelt key is refused rather than ignored, and
 * every key carries a description: `renderConfigReference.ts` writes the
 * reference in docs/config.md and docs/config.schema.json from this schema.
 * No key has a parse-time default (a default filled in by one file would
 * override the other file's value when they are merged); the defaults are
 * documented with `meta({ default })` (a value) or `meta({ defaultText })`
 * (words, for a default that depends on something) and applied by whoever
 * reads the key.
 */

/** The providers turnloom has an adapter for; a configured provider is one of these kinds. */
export const providerKinds = ['anthropic', 'openai-chat', 'openai-responses'] as const;
export type ProviderKind = (typeof providerKinds)[number];

/** Provider names that exist without configuration (scripted is always there; the others need their key). */
export const builtInProviders = ['scripted', ...providerKinds] as const;

/** Agents that exist without configuration; `agents` may override them key by key. */
export const builtInAgents = ['build', 'plan'] as const;

const namePattern = /^[A-Za-z0-9_-]{1,32}$/;
const nameRule = 'must be 1-32 letters, digits, "_" or "-"';
const providerName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-"');
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be the name of an environment variable (like ANTHROPIC_API_KEY), not the key itself');
const modelName = z.string().min(1).max(200);
const contextWindow = z.number().int().min(1_000).max(100_000_000);
const secretRefused = 'looks like a secret written out: put it in an environment variable and write ${VARIABLE} here';
const expandable = z.string().max(8_192).refine((value) => !looksLikeSecret(value), secretRefused);

export const permissionModeSchema = z
  .enum(permissionModes as [PermissionMode, ...PermissionMode[]])
  .describe('`ask`: reads run, edits and commands ask; `auto-edits`: reads and edits run, commands ask; `full`: everything runs; `read-only`: only reads run');

export const permissionRuleSchema = z
  .object({
    tool: z.string().min(1).max(64).describe('A tool name, or `*` for every tool'),
    pattern: z.string().min(1).max(1_000).describe('What the call touches (a path, a command); `*` stands for any run of characters unless `match` is `exact`'),
    decision: z.enum(['allow', 'ask', 'deny']).describe('What happens to a matching call; a matching `deny` wins over `ask`, which wins over `allow`'),
    match: z.enum(['exact', 'wildcard']).optional().describe('`wildcard` (the default): `*` stands for any run of characters; `exact`: the pattern as written').meta({ default: 'wildcard' }),
  })
  .strict()
  .describe('One permission rule');

const rulesSchema = z.array(permissionRuleSchema).max(200);

export const providerConfigSchema = z
  .object({
    kind: z
      .enum(providerKinds)
      .optional()
      .describe('Which adapter serves this provider; required for a name that is not built in, and for a built-in name it must be that name'),
    baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional().describe('The server to call instead of the official one (any compatible server)'),
    apiKeyEnv: envName
      .optional()
      .describe('The environment variable holding the API key (never the key itself); the provider is available when it is set, and an OpenAI kind with a `baseUrl` other than api.openai.com also without it (a local server takes no key)')
      .meta({ defaultText: 'ANTHROPIC_API_KEY for anthropic, OPENAI_API_KEY for the OpenAI kinds' }),
    model: modelName.optional().describe('The model used when a turn names none').meta({ defaultText: 'claude-sonnet-4-5 for anthropic, gpt-4.1-mini for the OpenAI kinds' }),
    contextWindow: contextWindow
      .optional()
      .describe('The context window of this provider’s models in tokens, when the known one is wrong or unknown; a process takes one window for all its turns, so this applies to the provider `run` uses, or to the default provider of `serve` and `worker`'),
  })
  .strict()
  .describe('One provider: a built-in one tuned, or a new name served by an adapter of `kind`');

export const agentConfigSchema = z
  .object({
    description: z.string().max(1_000).optional().describe('What the agent is for, shown when choosing one'),
    instructions: z.string().max(100_000).optional().describe('Instructions added to the system prompt of the agent’s turns'),
    provider: providerName.optional().describe('The provider its turns run on (default: the default provider)'),
    model: modelName.optional().describe('The model its turns run on (default: the provider’s)'),
    mode: permissionModeSchema.optional(),
    rules: rulesSchema.optional().describe('Permission rules added to the thread’s while the agent runs'),
    tools: z
      .array(z.string().regex(/^[A-Za-z0-9_*.-]{1,128}$/, 'must be a tool name or a pattern with * (like everything__*)'))
      .max(500)
      .optional()
      .describe('The tools the agent may call, by name or with * (MCP tools are named server__tool); default: all'),
  })
  .strict()
  .describe('One agent: a new one, or an override of a built-in one (build, plan)');

const timeoutMs = z.number().int().min(100).max(3_600_000).optional().describe('How long a call to the server may take, in milliseconds').meta({ default: 60_000 });
const enabled = z.boolean().optional().describe('`false` keeps the server configured but not started').meta({ default: true });

const serverUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).describe('The server’s HTTP endpoint');
const headers = z.record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name'), expandable).optional().describe('Headers sent with every request; `${VAR}` in a value is taken from turnloom’s environment');
const serverArgs = z.array(expandable).max(200).optional().describe('Its arguments; `${VAR}` in one is taken from turnloom’s environment (a token passed as an argument stays out of the file)');
const serverEnv = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), expandable).optional().describe('Its environment beyond PATH, HOME and the locale; `${VAR}` in a value is taken from turnloom’s environment');

/**
 * One server as Claude Desktop, Cursor and Claude Code write it under
 * `mcpServers`: `type` says which (`stdio` when left out and `command` is
 * given). It is mapped onto the `mcp` shape when the file is read.
 */
export const mcpServersEntrySchema = z
  .object({
    type: z.enum(['stdio', 'http', 'sse']).optional().describe('`stdio` (a process), `http` (Streamable HTTP) or `sse` (HTTP+SSE)').meta({ defaultText: 'stdio with `command`, http with `url`' }),
    command: z.string().min(1).max(4_096).optional().describe('The program that serves MCP on its standard input and output'),
    args: serverArgs,
    env: serverEnv,
    cwd: z.string().min(1).max(4_096).optional().describe('The folder it runs in (default: a folder of its own, outside the workspace)'),
    url: serverUrl.optional(),
    headers,
    timeoutMs,
    enabled,
  })
  .strict()
  .superRefine((entry, context) => {
    const type = entry.type ?? (entry.url !== undefined && entry.command === undefined ? 'http' : 'stdio');
    const stray = type === 'stdio' ? (['url', 'headers'] as const).find((key) => entry[key] !== undefined) : (['command', 'args', 'env', 'cwd'] as const).find((key) => entry[key] !== undefined);
    if (type === 'stdio' && entry.command === undefined) context.addIssue({ code: 'custom', path: ['command'], message: 'a stdio server needs `command` (or give `url` and `type: "http"`)' });
    else if (type !== 'stdio' && entry.url === undefined) context.addIssue({ code: 'custom', path: ['url'], message: `a server of type "${type}" needs \`url\`` });
    else if (stray !== undefined) context.addIssue({ code: 'custom', path: [stray], message: `a ${type} server takes no \`${stray}\`` });
  })
  .describe('One MCP server in the `mcpServers` shape of Claude Desktop, Cursor and Claude Code');

export const mcpServerSchema = z
  .union([
    z
      .object({
        command: z.string().min(1).max(4_096).describe('The program that serves MCP on its standard input and output'),
        args: serverArgs,
        env: serverEnv,
        cwd: z.string().min(1).max(4_096).optional().describe('The folder it runs in, relative to the workspace (default: a folder of its own, outside the workspace); user file only'),
        timeoutMs,
        enabled,
      })
      .strict()
      .describe('A server started as a process (stdio)'),
    z
      .object({
        url: serverUrl,
        headers,
        transport: z.enum(['streamable-http', 'sse']).optional().describe('How it speaks over HTTP: Streamable HTTP, or the older HTTP+SSE').meta({ default: 'streamable-http' }),
        timeoutMs,
        enabled,
      })
      .strict()
      .describe('A server reached over HTTP'),
  ])
  .describe('One MCP tool server: `command` (a process) or `url` (HTTP)');

export const compactionConfigSchema = z
  .object({
    auto: z
      .boolean()
      .optional()
      .describe('Whether threads `run` creates compact older turns when the context no longer fits (`false`: such a turn fails instead)')
      .meta({ default: true }),
    keepRecentTurns: z.number().int().min(0).max(100).optional().describe('Most recent older turns kept verbatim when compacting').meta({ default: 1 }),
    maxPerTurn: z.number().int().min(0).max(10).optional().describe('Compactions one turn may make before it fails').meta({ default: 2 }),
  })
  .strict()
  .describe('When and how older turns are summarised to fit the context window');

export const configSchema = z
  .object({
    $schema: z.string().max(2_048).optional().describe('The JSON Schema this file follows, for editors (ignored by turnloom)'),
    provider: providerName.optional().describe('The default provider: a built-in one (scripted, anthropic, openai-chat, openai-responses) or one under `providers`').meta({ defaultText: 'the first with its key set, else scripted' }),
    model: modelName.optional().describe('The default provider’s model').meta({ defaultText: 'the provider’s' }),
    providers: z.record(providerName, providerConfigSchema).optional().describe('Providers by name: built-in ones tuned, new ones with `kind`'),
    agent: z.string().regex(namePattern, nameRule).optional().describe('The default agent').meta({ default: 'build' }),
    agents: z.record(z.string().regex(namePattern, nameRule), agentConfigSchema).optional().describe('Agents by name: new ones, or overrides of the built-in build and plan'),
    permissions: z
      .object({
        mode: permissionModeSchema.optional().meta({ default: 'ask' }),
        rules: rulesSchema.optional().describe('Rules for tool calls; the project file may add only `ask` and `deny` rules'),
      })
      .strict()
      .optional()
      .describe('What new threads let their agent do without asking; the project file may not set `mode` nor add `allow` rules'),
    mcp: z.record(z.string().regex(namePattern, nameRule), mcpServerSchema).optional().describe('MCP tool servers by name; in the project file, servers offered: each starts once the person allows it'),
    mcpServers: z
      .record(z.string().regex(namePattern, nameRule), mcpServersEntrySchema)
      .optional()
      .describe('MCP tool servers in the shape Claude Desktop, Cursor and Claude Code write; a name may not be under both `mcp` and `mcpServers`'),
    mcpAllowed: z
      .record(z.string().regex(namePattern, nameRule), z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 in hex'))
      .optional()
      .describe('Project MCP servers the person allowed: the server’s name and the SHA-256 of the spec allowed (a changed spec asks again); written by `turnloom mcp allow`; user file only'),
    contextWindow: contextWindow.optional().describe('The model’s context window in tokens, when the known one is wrong or unknown').meta({ defaultText: 'the model’s, if known' }),
    compaction: compactionConfigSchema.optional(),
  })
  .strict()
  .describe('turnloom’s configuration: ~/.config/turnloom/config.json (the user file) and turnloom.json at the workspace root (the project file)');

export type TurnloomConfig = z.infer<typeof configSchema>;
export type ProviderConfig = z.infer<typeof providerConfigSchema>;
export type AgentConfig = z.infer<typeof agentConfigSchema>;
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type McpServersEntry = z.infer<typeof mcpServersEntrySchema>;
