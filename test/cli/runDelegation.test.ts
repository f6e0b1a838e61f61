import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { type RecordedStreamServer, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { type Folder, chatText, chatToolCall, chatToolCalls, gitRepo, openAiEnv, plainFolder, run, summaryOf } from './runFixtures.ts';

interface ChatBody {
  messages: Array<{ role: string; content: string | null }>;
  tools?: Array<{ function: { name: string } }>;
}

/**
 * One OpenAI-compatible server answering three conversations at once, by
 * what each request is: the parent delegates twice in one answer, then
 * reports; the explore child answers; the general child writes a file (an
 * approval, asked on the parent's behalf), then answers.
 */
function model(): Promise<RecordedStreamServer> {
  return serveRecordedStream('openai-chat', (raw) => {
    const body = raw as ChatBody;
    // Side work (the thread's title and summary) offers no tools.
    if (body.tools === undefined) return { kind: 'stream', chunks: chatText('Survey of the project') };
    const prompt = body.messages.find((message) => message.role === 'user')?.content;
    const results = body.messages.filter((message) => message.role === 'tool').map((message) => message.content ?? '');
    if (prompt === 'find where sessions are made') return { kind: 'stream', chunks: chatText('Sessions are made in src/session.js.'), delayMs: 30 };
    if (prompt === 'write notes.txt saying hello') {
      return results.length === 0
        ? { kind: 'stream', chunks: chatToolCall('call_notes', 'write', { path: 'notes.txt', content: 'hello\n' }) }
        : { kind: 'stream', chunks: chatText('I wrote notes.txt.'), delayMs: 30 };
    }
    if (results.length === 0) {
      return {
        kind: 'stream',
        chunks: chatToolCalls([
          { callId: 'call_explore', name: 'task', input: { agent: 'explore', prompt: 'find where sessions are made', description: 'find sessions' } },
          { callId: 'call_write', name: 'task', input: { agent: 'general', prompt: 'write notes.txt saying hello' } },
        ]),
      };
    }
    return { kind: 'stream', chunks: chatText(`Done: ${results.map((result) => result.split('\n')[0]).join(' / ')}`) };
  });
}

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

describe('turnloom run with sub-agents, against an OpenAI-compatible server', () => {
  it('two task calls in one step run as two child threads, the approval of one is answered by the run, and both answers come back', { timeout: 90_000 }, async () => {
    const workspace: Folder = gitRepo();
    const data: Folder = plainFolder();
    const server = await model();
    cleanup.push(() => workspace.remove(), () => data.remove(), () => server.close());
    const result = await run(['run', 'survey the project', '--cwd', workspace.path, '--data', join(data.path, 'threads'), '--approve', 'auto', '--json'], {
      cwd: workspace.path,
      env: openAiEnv(server.baseURL),
    });
    expect(result.code, result.stderr).toBe(0);
    const report = summaryOf(result.stdout) as { threadId: string; status: string; text: string; toolCalls: Array<{ name: string; state: string; output: string }> };
    expect(report.status).toBe('completed');
    expect(report.text).toBe('Done: Sessions are made in src/session.js. / I wrote notes.txt.');
    expect(report.toolCalls.map((call) => [call.name, call.state])).toEqual([
      ['task', 'completed'],
      ['task', 'completed'],
    ]);
    // The child's write was asked on the parent's behalf, and the run's policy answered it.
    expect(result.stderr).toMatch(/✔ allowed write notes\.txt \(--approve auto\)/);
    expect(readFileSync(join(workspace.path, 'notes.txt'), 'utf8')).toBe('hello\n');

    const store = LmdbStore.open(join(data.path, 'threads'));
    try {
      const parent = store.readView(report.threadId)!;
      const turn = parent.turns[parent.turnIds[0]!]!;
      const tasks = turn.messages[1].parts.filter((part) => part.task);
      const children = tasks.map((part) => store.readView(part.task!.childThreadId)!);
      expect(children.map((child) => [child.parent?.threadId, child.parent?.depth, child.turns[child.turnIds[0]!]!.agent, child.turns[child.turnIds[0]!]!.state])).toEqual([
        [report.threadId, 1, 'explore', 'completed'],
        [report.threadId, 1, 'general', 'completed'],
      ]);
      // The explore child ran read-only: it was offered no tool that changes anything.
      const exploreTools = server.requests.map((request) => request.body as ChatBody).find((body) => body.messages.some((message) => message.content === 'find where sessions are made'))!.tools!;
      expect(exploreTools.map((tool) => tool.function.name)).toEqual(['read', 'list', 'glob', 'grep']);
      // The general child's log holds its approval, granted by the run on its parent's behalf.
      const generalTurn = children[1]!.turns[children[1]!.turnIds[0]!]!;
      expect(generalTurn.approvals.map((approval) => [approval.toolName, approval.state, approval.decidedBy])).toEqual([['write', 'consumed', 'local']]);
      expect(turn.activities.filter((activity) => activity.kind === 'task')).toHaveLength(4);
    } finally {
      await store.close();
    }
  });
});
