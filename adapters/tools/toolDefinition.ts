import { z } from 'zod';
import type { ApprovalPreview, ToolKind, ToolResult, ToolSpec } from '../../domain/index.ts';
import type { CommandSettings, KeptCommands } from './commandProcess.ts';
import type { Ripgrep } from './ripgrep.ts';
import type { Workspace } from './workspacePath.ts';

export const workspaceToolNames = ['read', 'write', 'edit', 'list', 'glob', 'grep', 'bash'] as const;
export type WorkspaceToolName = (typeof workspaceToolNames)[number];

/** What a running call may use; limits come from the executor's options. */
export interface ToolContext {
  workspace: Workspace;
  signal: AbortSignal;
  maxOutputChars: number;
  maxReadBytes: number;
  bashTimeoutMs: number;
  /** What glob and grep run; null where there is no `rg`. */
  ripgrep: Ripgrep | null;
  /** Hears what a command prints, as it prints it. */
  onOutput?: (chunk: string) => void;
  /** The file's digest in the diff a person allowed the call from (null: nothing to check), as `ToolCall.approvedDigest`. */
  approvedDigest: string | null;
  /** The turn the call is run for (null: none), to which a kept command belongs. */
  turnId: string | null;
  /** How a command starts now: isolated or not (probed once per process), and which folders it sees hidden. */
  commandSettings(): Promise<CommandSettings>;
  kept: KeptCommands;
}

/** A call whose input passed its schema, ready to classify and run; or why the input did not pass. */
export type PreparedCall =
  | {
      ok: true;
      subject: string;
      outlivesCall: boolean;
      run(context: ToolContext): Promise<string | ToolResult>;
      /** What the call would change, for the person asked to allow it (`null`: nothing to show). */
      preview(workspace: Workspace): Promise<ApprovalPreview | null>;
    }
  | { ok: false; problems: string };

export interface WorkspaceTool {
  readonly kind: ToolKind;
  readonly spec: ToolSpec;
  prepare(input: unknown, workspace: Workspace): PreparedCall;
}

interface ToolDefinition<Schema extends z.ZodType> {
  name: WorkspaceToolName;
  description: string;
  kind: ToolKind;
  input: Schema;
  subject(input: z.output<Schema>, workspace: Workspace): string;
  /** Whether the call leaves processes running after it returns; left out, it does not. */
  outlivesCall?(input: z.output<Schema>): boolean;
  /** What the call would change, worked out without changing anything; a `ToolError` says why it cannot be shown. */
  preview?(input: z.output<Schema>, workspace: Workspace): Promise<ApprovalPreview>;
  /** A string is a successful result; failures throw (a `ToolError` for a message written for the model). */
  run(input: z.output<Schema>, context: ToolContext): Promise<string | ToolResult>;
}

/** `oldText: expected string, received undefined; Unrecognized key: "extra"`, for the model to correct itself from. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const message = issue.message.replace(/^Invalid input: /, '');
      return issue.path.length > 0 ? `${issue.path.join('.')}: ${message}` : message;
    })
    .join('; ');
}

/** A tool whose spec is generated from the schema its input is checked with, so the model is told exactly what is accepted. */
export function defineTool<Schema extends z.ZodType>(definition: ToolDefinition<Schema>): WorkspaceTool {
  const inputSchema: Record<string, unknown> = { ...z.toJSONSchema(definition.input) };
  delete inputSchema.$schema;
  return {
    kind: definition.kind,
    spec: { name: definition.name, description: definition.description, inputSchema },
    prepare(input, workspace) {
      const parsed = definition.input.safeParse(input);
      if (!parsed.success) return { ok: false, problems: describeIssues(parsed.error) };
      const valid = parsed.data;
      return {
        ok: true,
        subject: definition.subject(valid, workspace),
        outlivesCall: definition.outlivesCall?.(valid) ?? false,
        run: (context) => definition.run(valid, context),
        preview: async (at) => (definition.preview ? definition.preview(valid, at) : null),
      };
    },
  };
}
