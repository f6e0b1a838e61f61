import type { ThreadWatch } from '../../protocol/threadWatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import type { AgentProfile, Logger, ProviderAdapter, RequestContext, ToolExecutor, WorkspaceCheckpoints } from '../../domain/index.ts';
import type { RetryPolicy } from '../runtime/retryPolicy.ts';
import type { Outbox } from './outbox.ts';
import type { TurnHooks } from './turnHooks.ts';
import type { TurnTracing } from './turnTracing.ts';

export interface CompactionOptions {
  /** The model's context window in tokens, instead of the known one (`--context-window`). */
  contextWindow: number | null;
  /** Compactions one turn may make before it fails (default 2). */
  maxPerTurn: number;
  /** Most recent older turns kept verbatim (default 1). */
  keepRecentTurns: number;
}

export interface TurnLoopOptions {
  /** A stream silent this long counts as a dropped connection. */
  idleTimeoutMs: number;
  maxSteps: number;
  /** A tool's output longer than this is cut (the model and the log get a note saying how much). */
  maxToolOutputChars: number;
  /**
   * Whether the tools a step asks for are run (and the turn goes on). `false`,
   * or `false` for a given step: they are recorded but not run, and the turn
   * ends with that answer (a plan-only run, or the end of a recording).
   */
  runTools: boolean | ((step: number) => boolean);
  retry: RetryPolicy;
  flushMs: number;
  maxBufferChars: number;
  random: () => number;
  /** When and how the context is compacted (see `compaction.ts`). */
  compaction: CompactionOptions;
}

/** A workspace's checkpoints, or why it keeps none (it is not a git repository). */
export type CheckpointSetting = { store: WorkspaceCheckpoints } | { off: string };

/** Why a turn's work stopped before it ended by itself. */
export type StopReason = { kind: 'interrupt'; reason: string } | { kind: 'leaseLost' } | { kind: 'shutdown'; reason: string } | { kind: 'engineAway'; reason: string };

/** One turn, as the worker that holds it runs it. */
export interface TurnWork {
  threadId: string;
  turnId: string;
  /** The worker's own fold of the thread (all turns loaded), kept by the engine's events. */
  fold: ThreadWatch;
  outbox: Outbox;
  adapter: ProviderAdapter | undefined;
  /** The folder the worker's tools work in (`null`: it serves none). */
  workspace: string | null;
  /** The workspace's tools, run for every call the provider does not run itself. */
  tools: ToolExecutor | undefined;
  /** Where the work tree is captured before the turn's first change and after it; `off` says why it is not. */
  checkpoints: CheckpointSetting | undefined;
  live: (delta: LiveDelta) => void;
  /** The worker's extension hooks, compaction first. */
  hooks: TurnHooks;
  /** Aborted with a `StopReason`. */
  signal: AbortSignal;
  options: TurnLoopOptions;
  log: Logger;
  /** The turn's spans on this worker (see `turnTracing.ts`). */
  tracing: TurnTracing;
  /** The agent profiles this worker knows, the built-in ones included. */
  agents: Readonly<Record<string, AgentProfile>>;
  /** The agent of a turn whose thread names none. */
  defaultAgent: string;
  /** What the turn's prompt is built from, as this worker sees it now (see `turnContext.ts`). */
  snapshot(agent: string): Promise<RequestContext>;
}

