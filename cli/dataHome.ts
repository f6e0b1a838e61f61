import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, isAbsolute, join } from 'node:path';

/**
 * Where a workspace's threads are kept when no `--data` is given: a folder
 * of its own under the XDG data home (`$XDG_DATA_HOME`, else
 * `~/.local/share`), never inside the workspace, so the database is not
 * among the files the agent edits, greps or checkpoints. The folder's name
 * is the workspace's name and a hash of its real path: readable, and two
 * checkouts with the same name do not share one.
 */
export function defaultDataFolder(workspace: string, env: NodeJS.ProcessEnv = process.env): string {
  let real = workspace;
  try {
    real = realpathSync(workspace);
  } catch {
    // A workspace that vanished still gets the folder its path names.
  }
  const name = basename(real).replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 48) || 'root';
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 12);
  return join(dataHome(env), 'workspaces', `${name}-${hash}`);
}

/** turnloom's own folder under the XDG data home; a relative `XDG_DATA_HOME` is ignored, as the specification says. */
export function dataHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.XDG_DATA_HOME;
  return join(configured && isAbsolute(configured) ? configured : join(homedir(), '.local', 'share'), 'turnloom');
}

/**
 * Where each stdio MCP server gets a folder of its own to run in: under the
 * XDG cache home, outside the data home, which servers see empty as
 * commands do (their folder cannot be inside what is hidden from them).
 */
export function mcpServersHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.XDG_CACHE_HOME;
  return join(configured && isAbsolute(configured) ? configured : join(homedir(), '.cache'), 'turnloom', 'mcp');
}
