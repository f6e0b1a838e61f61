import type { ToolSpec } from './providerAdapter.ts';

/**
 * What a model call says beyond the conversation: the rendered system
 * prompt, the tools it offers, the model. A worker records it
 * (`request.header`) when it first appears or changes, with a digest of
 * those fields as it rendered them; the engine checks every call against
 * the header its own log holds, so the log alone reproduces each request.
 */
export interface RequestHeader {
  provider: string;
  model: string | null;
  system: string;
  tools: ToolSpec[];
  /** What the provider's calls send beside the request (see `ProviderAdapter.parameters`); absent in headers recorded before parameters were. */
  params?: Record<string, string | number | boolean>;
  /** Of the fields above, as the worker that recorded it rendered them (see `headerDigest`). */
  digest: string;
}

/** A project instructions file as the model was given it. */
export interface InstructionsFile {
  /** Where it was read: a workspace-relative path, or `~/…` for the user's own. */
  path: string;
  text: string;
  /** Whether it was longer than the model is given (the text ends with a note saying so). */
  cut: boolean;
}

/**
 * The snapshot a turn's prompt is built from, taken when the turn starts
 * (`request.context`): a turn resumed on another worker, or replayed, sees
 * what the first one saw.
 */
export interface RequestContext {
  /** The agent profile the turn runs as. */
  agent: string;
  /** The worker's workspace, where its tools work; `null` when it has none. */
  workspace: string | null;
  platform: string;
  /** The worker's local date, `YYYY-MM-DD`. */
  date: string;
  /** The workspace's repository, when it is one: the branch (null when detached) and a bounded `git status --short`. */
  git: { branch: string | null; status: string } | null;
  provider: string;
  model: string | null;
  /** AGENTS.md (or CLAUDE.md) from the repository root down to the workspace, then the user's own. */
  instructions: InstructionsFile[];
}
