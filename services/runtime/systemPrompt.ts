import type { AgentProfile, RequestContext, ToolSpec } from '../../domain/index.ts';

/** How to use each built-in tool well; a tool the turn is not offered is not mentioned. */
const toolAdvice: Record<string, string> = {
  read: '`read` a file before you change it, and again after a change you are unsure of; read the part you need (offset and limit) in large files.',
  list: '`list` a folder to see what is there before guessing names.',
  glob: '`glob` finds files by name pattern; prefer it to listing folder after folder.',
  grep: '`grep` finds where something is defined or used; search before you assume.',
  edit: '`edit` replaces one exact, unique piece of text: copy it from what you read, with enough lines around it to be unique. Prefer it to rewriting a file.',
  write: '`write` creates a file or replaces one whole; use it for new files, not to make a small change.',
  bash: '`bash` runs a command in the workspace: run the project’s tests and build after you change code, and read their output before you say anything works. Keep commands non-interactive; give long ones a timeout.',
  // Built in, so never among the "tool servers the user configured" below.
  task: '`task` hands a self-contained piece of work to a sub-agent, in a thread of its own; several in one answer run at once, and each answers with its result.',
};

/** Where the provider's models need a word of their own. */
const providerNotes: Record<string, string> = {
  anthropic: 'Independent tool calls may go in one answer; they run in order.',
  'openai-chat': 'Call tools through the function-calling interface only; never write a tool call as text.',
  'openai-responses': 'Call tools through the function-calling interface only; never write a tool call as text.',
};

function environmentBlock(context: RequestContext): string {
  const lines = [
    `Workspace: ${context.workspace ?? 'none (this worker has no workspace: tools that need files fail)'}`,
    `Platform: ${context.platform}`,
    `Date: ${context.date}`,
    `Model: ${context.model ?? 'the provider’s default'} (${context.provider})`,
    `Agent: ${context.agent}`,
  ];
  if (context.git) {
    lines.push(`Git repository: yes, on ${context.git.branch ? `branch ${context.git.branch}` : 'a detached HEAD'}`);
    lines.push(context.git.status ? `Git status at the start of this turn:\n${context.git.status}` : 'Git status at the start of this turn: clean');
  } else {
    lines.push('Git repository: no');
  }
  return `<environment>\n${lines.join('\n')}\n</environment>`;
}

function instructionsBlock(context: RequestContext): string | null {
  if (context.instructions.length === 0) return null;
  const files = context.instructions.map((file) => `<file path="${file.path}">\n${file.text}\n</file>`);
  return `Project instructions (from the files below; follow them unless the user says otherwise):\n<instructions>\n${files.join('\n')}\n</instructions>`;
}

/**
 * The system prompt of a turn's model calls, from what was recorded when
 * the turn started (so a resumed or replayed turn renders the same text),
 * the agent it runs as and the tools it is offered.
 */
export function renderSystemPrompt(context: RequestContext, agent: AgentProfile, tools: readonly ToolSpec[]): string {
  const names = new Set(tools.map((tool) => tool.name));
  const advice = Object.entries(toolAdvice)
    .filter(([name]) => names.has(name))
    .map(([, text]) => `- ${text}`);
  const others = tools.filter((tool) => !Object.hasOwn(toolAdvice, tool.name)).map((tool) => tool.name);
  if (others.length > 0) advice.push(`- Other tools (${others.join(', ')}) come from tool servers the user configured; read their descriptions.`);
  const sections = [
    'You are a coding agent working in the user’s repository through tools, in a thread the user and other programs can watch. Work carefully and say plainly what you did and did not do.',
    [
      'How to work:',
      '- Read before you edit: look at the code you are changing and at how it is used.',
      '- Keep to the workspace. Paths are relative to its root; do not reach outside it, and leave `.git` alone.',
      '- Make the smallest change that does what was asked, in the project’s own style.',
      '- After changing code, run the tests (and the build, if there is one) when you can, and report what they said.',
      '- Never invent results: if you could not run or check something, say so.',
    ].join('\n'),
    advice.length > 0 ? `Tools:\n${advice.join('\n')}` : 'You have no tools in this turn: answer from what you know and what the user gave you.',
    'Permissions: some tool calls wait for a person to approve them. A call that was refused, or that the permission mode does not allow, comes back as an error result: do not try to get around it (another tool, another path, a different spelling of the command); explain what you wanted to do and why, and go on with what you may do.',
    providerNotes[context.provider] ?? null,
    agent.instructions || null,
    environmentBlock(context),
    instructionsBlock(context),
  ];
  return sections.filter((section): section is string => section !== null).join('\n\n');
}
