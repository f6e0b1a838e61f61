import { z } from 'zod';
import { TASK_TOOL, type ToolCall, type ToolClass, type ToolExecutor, type ToolKind, type ToolResult, type ToolSpec } from '../../domain/index.ts';
import { describeIssues } from './toolDefinition.ts';
import { unparsedArguments } from './unparsedArguments.ts';

/** What a tool's `execute` is given beside its input: where the call runs, and when to stop. */
export interface ToolCallContext {
  threadId: string;
  turnId: string;
  /** The model's id for this call. */
  callId: string;
  /** Aborts when the turn is interrupted (or its worker stops or loses it): stop, and return or throw. */
  signal: AbortSignal;
  /** The folder the worker serves (`null`: none): a tool that touches files should keep to it. */
  workspace: string | null;
}

/** What `tool()` takes: the Agents SDK's `tool()` shape, with the permission kind its calls are asked under. */
export interface ToolOptions<Parameters extends z.ZodObject> {
  /** What the model calls it: 1 to 64 letters, digits, `_` or `-`, unique among the worker's tools. */
  name: string;
  /** What it does, for the model to know when to call it. */
  description: string;
  /** Its input, a Zod object: the model is shown it as JSON Schema, and a call whose input does not parse gets the problems as its error. */
  parameters: Parameters;
  /**
   * Runs one call with its parsed input. A string is the result as it is,
   * any other value is sent as JSON; a thrown error (or rejection) becomes
   * an error result the model reads.
   */
  execute: (input: z.output<Parameters>, context: ToolCallContext) => unknown;
  /**
   * What a call does, for the permission mode: `read` runs in every mode,
   * `edit` asks in `ask`, `command` asks in `ask` and `auto-edits`; both are
   * refused in `read-only` and run in `full`. A function decides per call.
   * Default `command`: a tool nobody classified asks first.
   */
  kind?: ToolKind | ((input: z.output<Parameters>) => ToolKind);
}

/** A tool of the program's own, made by `tool()`: give it to `openRuntime({ tools })` or `new Worker({ tools })`. */
export interface FunctionTool {
  readonly type: 'function';
  readonly name: string;
  readonly description: string;
  /** The JSON Schema of its input, as the model is shown it. */
  readonly parameters: Record<string, unknown>;
  /** Why a call with this input cannot run (it does not parse), for the model; `null`: it can. */
  problems(input: unknown): string | null;
  /** The permission kind of a call with this input; one whose input does not parse runs nothing, so it asks nobody (`read`). */
  kindOf(input: unknown): ToolKind;
  /** Runs one call: never throws; a bad input or a failure is a result with `isError`. */
  invoke(input: unknown, context: ToolCallContext): Promise<ToolResult>;
}

const namePattern = /^[a-zA-Z0-9_-]{1,64}$/;

const isZodObject = (value: unknown): value is z.ZodObject => (value as { _zod?: { def?: { type?: unknown } } } | null)?._zod?.def?.type === 'object';

/** The result as the model reads it: a string as it is, anything else as JSON. */
function outputOf(name: string, value: unknown): ToolResult {
  if (typeof value === 'string') return { output: value, isError: false };
  if (value === undefined) return { output: '', isError: false };
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return { output: json, isError: false };
  } catch {
    // A cycle or a BigInt: said below.
  }
  return { output: `${name} returned a value that is not JSON (${typeof value})`, isError: true };
}

/**
 * A tool the model may call, run in this process by the worker that runs
 * the turn: `tool({ name, description, parameters: z.object({ … }), execute })`.
 */
export function tool<Parameters extends z.ZodObject>(options: ToolOptions<Parameters>): FunctionTool {
  const { name, description, parameters, execute, kind = 'command' } = options;
  const refuse = (why: string) => new TypeError(`tool(${typeof name === 'string' ? JSON.stringify(name) : ''}): ${why}`);
  if (typeof name !== 'string' || !namePattern.test(name)) throw refuse('`name` must be 1 to 64 letters, digits, "_" or "-"');
  if (typeof description !== 'string' || description.trim() === '') throw refuse('`description` must say what the tool does');
  if (!isZodObject(parameters)) throw refuse('`parameters` must be a Zod object (z.object({ … }))');
  if (typeof execute !== 'function') throw refuse('`execute` must be a function');
  if (typeof kind !== 'function' && !['read', 'edit', 'command'].includes(kind)) throw refuse('`kind` must be read, edit, command or a function of the input');
  const schema = (() => {
    try {
      // What the model writes is the schema's input (before defaults and transforms), and that is what it is shown.
      const { $schema: _, ...shown } = z.toJSONSchema(parameters, { io: 'input' }) as Record<string, unknown>;
      return shown;
    } catch (error) {
      throw refuse(`its parameters cannot be shown to the model as JSON Schema: ${error instanceof Error ? error.message : String(error)}`);
    }
  })();
  const parse = (input: unknown): { ok: true; input: z.output<Parameters> } | { ok: false; problems: string } => {
    const unparsed = unparsedArguments(input);
    if (unparsed !== null) return { ok: false, problems: `the arguments were not valid JSON: ${unparsed}` };
    const parsed = parameters.safeParse(input ?? {});
    return parsed.success ? { ok: true, input: parsed.data } : { ok: false, problems: describeIssues(parsed.error) };
  };
  return {
    type: 'function',
    name,
    description,
    parameters: schema,
    problems(input) {
      const parsed = parse(input);
      return parsed.ok ? null : `invalid input for ${name}: ${parsed.problems}`;
    },
    kindOf(input) {
      const parsed = parse(input);
      if (!parsed.ok) return 'read';
      return typeof kind === 'function' ? kind(parsed.input) : kind;
    },
    async invoke(input, context) {
      const parsed = parse(input);
      if (!parsed.ok) return { output: `invalid input for ${name}: ${parsed.problems}`, isError: true };
      if (context.signal.aborted) return { output: 'interrupted', isError: true };
      try {
        return outputOf(name, await execute(parsed.input, context));
      } catch (error) {
        if (context.signal.aborted) return { output: 'interrupted', isError: true };
        return { output: `${name} failed: ${error instanceof Error ? error.message : String(error)}`, isError: true };
      }
    },
  };
}

export const isFunctionTool = (value: unknown): value is FunctionTool => (value as { type?: unknown } | null)?.type === 'function' && typeof (value as FunctionTool).invoke === 'function';

/** Where the calls of one turn run. */
export interface ToolTurn {
  threadId: string;
  turnId: string;
  workspace: string | null;
}

/**
 * A worker's own tools (`tool()`), offered beside the executors it already
 * has (the workspace's, MCP servers'). Their names are checked once, here:
 * a name two tools share, or one of turnloom's own (`task`), is a
 * `TypeError`, so a clash is found at start and never by a model's call.
 */
export class FunctionTools {
  private readonly byName = new Map<string, FunctionTool>();

  constructor(tools: readonly FunctionTool[], beside: readonly ToolExecutor[]) {
    const offered = new Set(beside.flatMap((executor) => executor.specs().map((spec) => spec.name)));
    for (const each of tools) {
      if (!isFunctionTool(each)) throw new TypeError('tools: every entry must be made by tool() (or be a ToolExecutor)');
      if (each.name === TASK_TOOL) throw new TypeError(`tools: "${TASK_TOOL}" is the name of turnloom's own tool for sub-agents; give the tool another name`);
      if (offered.has(each.name)) throw new TypeError(`tools: "${each.name}" is already the name of one of the worker's tools (${[...offered].join(', ')}); give the tool another name`);
      if (this.byName.has(each.name)) throw new TypeError(`tools: two tools are named "${each.name}"`);
      this.byName.set(each.name, each);
    }
  }

  get size(): number {
    return this.byName.size;
  }

  /** Their executor for one turn's calls: each call's context names the turn, the call and the workspace. */
  forTurn(turn: ToolTurn): ToolExecutor {
    const named = (call: ToolCall) => this.byName.get(call.name);
    const specs: ToolSpec[] = [...this.byName.values()].map((each) => ({ name: each.name, description: each.description, inputSchema: each.parameters }));
    return {
      specs: () => specs,
      handles: (call) => named(call) !== undefined,
      // Like an MCP tool's, a call's subject is the tool's name: a rule (or an `always` answer) allows the tool.
      classify: (call): ToolClass => ({ kind: named(call)?.kindOf(call.input) ?? 'read', subject: call.name }),
      validate: (call) => {
        const each = named(call);
        return each ? each.problems(call.input) : `no tool named ${call.name}`;
      },
      execute: async (call, signal) => {
        const each = named(call);
        if (!each) return { output: `no tool named ${call.name}`, isError: true };
        return each.invoke(call.input, { threadId: turn.threadId, turnId: turn.turnId, callId: call.callId, signal, workspace: turn.workspace });
      },
    };
  }
}
