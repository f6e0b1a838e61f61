/** An MCP tool server a worker starts (stdio: a command) or reaches (Streamable HTTP: a URL). */
export type McpServerSpec =
  | { name: string; command: string; args?: string[]; env?: Record<string, string>; cwd?: string; timeoutMs?: number }
  | { name: string; url: string; headers?: Record<string, string>; transport?: 'streamable-http' | 'sse'; timeoutMs?: number };

/**
 * What a server's name may be: it prefixes its tools' names (`<server>__<tool>`),
 * which providers limit to these characters and 64 of them, so a name leaves room for the tool's.
 */
export const mcpServerNamePattern = /^[a-zA-Z0-9_-]{1,32}$/;

/** Whether the spec starts a process (stdio) rather than reaching a URL. */
export const isStdioServer = (spec: McpServerSpec): spec is Extract<McpServerSpec, { command: string }> => 'command' in spec;
