import type { TurnloomConfig } from './configSchema.ts';

const reference = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** A `${VAR}` whose variable is not set: the key it is in and the variable's name. */
export class MissingVariable extends Error {
  readonly path: string;
  readonly variable: string;

  constructor(path: string, variable: string) {
    super(`${path}: the environment variable ${variable} is not set`);
    this.name = 'MissingVariable';
    this.path = path;
    this.variable = variable;
  }
}

/**
 * The MCP servers' `args`, `env` and `headers` with each `${VAR}` replaced by the
 * variable's value, so a token lives in the environment and the file only
 * names it. Servers with `enabled: false` are left as written. Only those values are expanded: anywhere else `${…}` is taken
 * as written. Returns the config and the values that took a variable in
 * (for whoever keeps secrets out of logs); throws `MissingVariable` for the
 * first variable that is not set.
 */
export function expandVariables(config: TurnloomConfig, env: Readonly<Record<string, string | undefined>>): { config: TurnloomConfig; expanded: string[] } {
  if (!config.mcp) return { config, expanded: [] };
  const expanded: string[] = [];
  const expandOne = (value: string, path: string): string => {
    let used = false;
    const result = value.replace(reference, (_, variable: string) => {
      const found = env[variable];
      if (found === undefined) throw new MissingVariable(path, variable);
      used = true;
      return found;
    });
    if (used) expanded.push(result);
    return result;
  };
  const expand = (values: Record<string, string> | undefined, path: string) => values && Object.fromEntries(Object.entries(values).map(([key, value]) => [key, expandOne(value, `${path}.${key}`)]));
  const expandArgs = (args: string[], path: string) => args.map((arg, at) => expandOne(arg, `${path}.${at}`));
  const mcp = Object.fromEntries(
    Object.entries(config.mcp).map(([name, server]) => [
      name,
      // A server switched off may be switched off because its token is not at hand.
      server.enabled === false
        ? server
        : 'command' in server
        ? { ...server, ...(server.args ? { args: expandArgs(server.args, `mcp.${name}.args`) } : {}), ...(server.env ? { env: expand(server.env, `mcp.${name}.env`) } : {}) }
        : { ...server, ...(server.headers ? { headers: expand(server.headers, `mcp.${name}.headers`) } : {}) },
    ]),
  );
  return { config: { ...config, mcp }, expanded };
}
