import type { ProviderErrorInfo, ProviderEvent } from './providerEvents.ts';
import type { SideTaskKind } from './sideWork.ts';
import type { ApprovalPreview } from './approvalPreview.ts';

/** One message of the conversation as the model sees it, derived from the thread's log. */
export type ProviderMessage =
  | { role: 'user'; text: string }
  | { role: 'assistant'; parts: AssistantPart[] }
  | { role: 'tool'; callId: string; name: string; output: string; isError: boolean };

export type AssistantPart =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string; signature: string | null }
  | { kind: 'toolCall'; callId: string; name: string; input: unknown };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the input object. */
  inputSchema: Record<string, unknown>;
}

/** Everything one model call needs; `messages` is exactly what the log says was said. */
export interface ProviderRequest {
  model: string | null;
  system: string;
  messages: ProviderMessage[];
  tools: ToolSpec[];
  /** Set on side work's short calls (a title, a summary), which are no step of a turn; adapters may ignore it. */
  sideWork?: SideTaskKind;
}

/** A tool call the model made, ready to run. */
export interface ToolCall {
  callId: string;
  name: string;
  input: unknown;
  /**
   * Set by the worker, never by a model, on a call a person allowed from a
   * diff: the file's digest in that diff. The tool refuses the call if the
   * file is no longer so. Left out: nothing to check.
   */
  approvedDigest?: string;
}

export interface ToolResult {
  output: string;
  isError: boolean;
}

/** What a tool call does, for the permission rules: reads, edits files, or runs a command. */
export type ToolKind = 'read' | 'edit' | 'command';

/** A call as the permission rules see it: its kind, and what it touches (a path, a command line). */
export interface ToolClass {
  kind: ToolKind;
  subject: string;
  /** It leaves processes running after it returns (`bash` with `keepRunning`): no rule vouches for that, so it asks unless the mode is `full`. */
  outlivesCall?: boolean;
}

/** Runs the tools a model may call. */
export interface ToolExecutor {
  specs(): ToolSpec[];
  /** Whether this executor runs this call; left out, it runs every call. A provider's own tools may take only some. */
  handles?(call: ToolCall): boolean;
  classify(call: ToolCall): ToolClass;
  /**
   * Why the call cannot run as the model wrote it (a tool nobody offers, an
   * input its schema refuses), in words for the model; `null` or left out:
   * it may run. Asked before anybody is asked to allow the call, so a person
   * never approves what would only fail.
   */
  validate?(call: ToolCall): string | null;
  /**
   * What the call would change, for the person asked to allow it, worked out
   * without changing anything (a file's diff, a command and its folder);
   * `null` or left out: nothing to show. Never throws: why a preview could
   * not be made is itself a preview.
   */
  preview?(call: ToolCall): Promise<ApprovalPreview | null>;
  /**
   * Runs the call, for turn `turnId` when it has one; a bad input or a
   * failure is a result with `isError`, never a throw. Stops when `signal`
   * aborts. `onOutput`, when given, hears what the call prints as it prints
   * it (for people watching; the result still carries the output).
   */
  execute(call: ToolCall, signal: AbortSignal, turnId?: string, onOutput?: (chunk: string) => void): Promise<ToolResult>;
  /**
   * The turn has ended, however it ended: stop what its calls left running
   * on purpose (a call that `outlivesCall`), and resolve once it is gone.
   * Called before the turn's `after` checkpoint, so nothing they write escapes it.
   */
  endTurn?(turnId: string): Promise<void>;
}

/**
 * A provider behind one interface. `stream` yields canonical events for one
 * model call and throws `ProviderError` when the call fails; it stops
 * promptly when `signal` aborts.
 */
export interface ProviderAdapter {
  readonly name: string;
  /**
   * Tools this adapter brings for the calls it knows (a replay does not run
   * tools; the scripted provider has canned results); every other call runs
   * on the worker's workspace tools.
   */
  readonly tools?: ToolExecutor;
  /** What every call sends beside the request (a token limit, a thinking budget): recorded in the request header, so the log says it too. */
  readonly parameters?: Readonly<Record<string, string | number | boolean>>;
  startSession?(): Promise<{ providerSessionId: string | null }>;
  stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent>;
}

/** A failed model call, classified so the runner knows whether to retry. */
export class ProviderError extends Error {
  readonly info: ProviderErrorInfo;

  constructor(info: ProviderErrorInfo) {
    super(info.message);
    this.name = 'ProviderError';
    this.info = info;
  }
}
