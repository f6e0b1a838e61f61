import { afterEach, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../adapters/git/index.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import { WorkspaceTools } from '../../adapters/tools/index.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { ProviderMessage, ProviderRequest, ThreadView, TurnView } from '../../domain/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { type TestRepo, makeRepo } from '../git/gitRepoFixture.ts';
import { tempDir } from '../support/tempDir.ts';
import { stepOf } from '../workspace/workspaceFixture.ts';

type Script = (request: ProviderRequest, step: number) => ScriptInput;

/** The prompt a turn's requests start from: the parent's input, or the prompt a child was given. */
const firstUserText = (request: ProviderRequest) => (request.messages.findLast((message) => message.role === 'user') as Extract<ProviderMessage, { role: 'user' }>).text;
const toolResults = (request: ProviderRequest) => request.messages.filter((message): message is Extract<ProviderMessage, { role: 'tool' }> => message.role === 'tool');

/**
 * An engine with its local worker on a real repository and a data folder
 * that outlives it: `restart` stops the server and opens a new one on the
 * same folder, as a process that stopped and came back would.
 */
async function openDelegation(script: Script) {
  const repo: TestRepo = makeRepo(true);
  repo.write('a.txt', 'first line\n');
  repo.git('add', '-A');
  repo.git('commit', '-q', '-m', 'base');
  const data = tempDir('turnloom-delegation-');
  const requests: ProviderRequest[] = [];
  const provider = new ScriptedProvider((request) => {
    requests.push(request);
    return script(request, stepOf(request));
  });
  const hub = new InProcessHub();
  let server: TurnloomServer;
  const start = async () => {
    server = await startTurnloomServer({
      bus: hub.connect(),
      store: LmdbStore.open(data.path),
      providers: { scripted: provider },
      interruptDeadlineMs: 5_000,
      localWorker: { workspace: repo.path, tools: new WorkspaceTools({ root: repo.path }), checkpoints: { store: (await Checkpoints.open(repo.path))! } },
    });
  };
  await start();
  const client = new TurnloomClient(hub.connect());
  const thread = async (threadId: string): Promise<ThreadView> => (await client.call('thread.get', { threadId })).thread;
  const settled = async (threadId: string, turnId: string): Promise<TurnView> => {
    await expect.poll(async () => (await thread(threadId)).turns[turnId]?.state, { timeout: 30_000, interval: 25 }).toMatch(/^(completed|failed|interrupted)$/);
    return (await thread(threadId)).turns[turnId]!;
  };
  return {
    client,
    /** Another client on its own connection, as a second person would have. */
    otherClient: () => new TurnloomClient(hub.connect()),
    requests,
    thread,
    settled,
    restart: async () => {
      await server.stop();
      await start();
    },
    dispose: async () => {
      await server.stop();
      await client.bus.close();
      data.remove();
      repo.remove();
    },
  };
}

let fixture: Awaited<ReturnType<typeof openDelegation>> | undefined;
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
});

const task = (agent: string, prompt: string, description?: string) => ({ toolCall: { name: 'task', input: { agent, prompt, ...(description ? { description } : {}) } } });

describe('delegation: a turn hands work to child agents, each in a thread of its own', () => {
  it('two task calls in one step run at the same time, and both answers come back as the tool results', async () => {
    fixture = await openDelegation((request, step) => {
      switch (firstUserText(request)) {
        case 'survey the project':
          return { steps: [step === 0 ? [task('explore', 'find where sessions are made', 'find sessions'), task('general', 'count the tests')] : [{ text: 'Both sub-agents answered.' }]] };
        case 'find where sessions are made':
          return { chunkSize: 4, delayMs: 20, steps: [[{ text: 'Sessions are made in src/session.js.' }]] };
        default:
          return { chunkSize: 4, delayMs: 20, steps: [[{ text: 'There are 3 tests.' }]] };
      }
    });
    const { client } = fixture;
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'survey the project' } });
    const turn = await fixture.settled(threadId, turnId);
    expect(turn.state).toBe('completed');

    // The parent's model read both answers as the results of its two calls.
    const last = fixture.requests.findLast((request) => firstUserText(request) === 'survey the project')!;
    const results = toolResults(last);
    expect(results.map((result) => [result.name, result.isError])).toEqual([
      ['task', false],
      ['task', false],
    ]);
    expect(results[0]!.output).toMatch(/^Sessions are made in src\/session\.js\.\n\n\[sub-agent explore, thread thr_\w+\]$/);
    expect(results[1]!.output).toMatch(/^There are 3 tests\.\n\n\[sub-agent general, thread thr_\w+\]$/);

    // Each child is a thread of its own, linked to the call it answers, one level down, running as the agent asked.
    const parts = turn.messages[1].parts.filter((part) => part.task !== null);
    expect(parts.map((part) => [part.task!.agent, part.task!.status])).toEqual([
      ['explore', 'completed'],
      ['general', 'completed'],
    ]);
    const children = await Promise.all(parts.map((part) => fixture!.thread(part.task!.childThreadId)));
    children.forEach((child, at) => {
      expect(child.parent).toEqual({ threadId, turnId, partId: parts[at]!.id, toolCallId: parts[at]!.tool!.callId, depth: 1 });
      expect(child.turnIds).toHaveLength(1);
    });
    const [explore, general] = children.map((child) => child.turns[child.turnIds[0]!]!);
    expect([explore!.agent, explore!.state, general!.agent, general!.state]).toEqual(['explore', 'completed', 'general', 'completed']);
    // Both children streamed at once: each started before the other ended.
    expect(explore!.startedAt!).toBeLessThan(general!.endedAt!);
    expect(general!.startedAt!).toBeLessThan(explore!.endedAt!);

    // The parent's watchers see each child start and settle as activities of the calls; the children's usage counts to the parent's turn.
    const taskActivities = turn.activities.filter((activity) => activity.kind === 'task');
    // Started in either order (they run at once), each before any settled.
    expect(taskActivities.slice(0, 2).map((activity) => activity.message).sort()).toEqual(['explore started: find sessions', 'general started']);
    expect(taskActivities.slice(2).map((activity) => activity.message)).toEqual([expect.stringMatching(/^thr_\w+ completed$/), expect.stringMatching(/^thr_\w+ completed$/)]);
    const own = turn.steps.reduce((sum, step) => sum + (step.usage?.output ?? 0), 0);
    expect(turn.usage.output).toBe(own + explore!.usage.output + general!.usage.output);
  });

  it('nine task calls in one answer: the first eight run, only the ninth is refused, before any thread is made for it', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    fixture = await openDelegation((request, step) => {
      const prompt = firstUserText(request);
      if (prompt === 'split it nine ways') return { steps: [step === 0 ? Array.from({ length: 9 }, (_, at) => task('general', `piece ${at + 1}`)) : [{ text: 'All answered.' }]] };
      return { steps: [[{ text: `${prompt} done.` }]] };
    });
    const { client } = fixture;
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'split it nine ways' } });
    const turn = await fixture.settled(threadId, turnId);
    process.off('warning', onWarning);
    expect(turn.state).toBe('completed');
    const tasks = turn.messages[1].parts.filter((part) => part.task !== null).map((part) => part.task!);
    expect(tasks.map((each) => each.status)).toEqual([...Array(8).fill('completed'), 'refused']);
    expect(tasks[8]!.error).toMatch(/^delegation refused: this turn has already started 8 sub-agents/);
    await expect(client.call('thread.get', { threadId: tasks[8]!.childThreadId })).rejects.toMatchObject({ code: 'not_found' });
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('refuses a task beyond the depth limit with a tool error the model reads, and a restart does not reset the depth', async () => {
    const levels = ['level one', 'level two', 'level three'];
    fixture = await openDelegation((request, step) => {
      const prompt = firstUserText(request);
      const next = levels[levels.indexOf(prompt) + 1];
      if (step === 0 && prompt !== 'start again') return { steps: [[task('general', next ?? 'level four')]] };
      if (step === 0) return { steps: [[task('general', 'one more level')]] };
      return { steps: [[{ text: `${prompt}: ${toolResults(request).at(-1)!.output.split('\n')[0]}` }]] };
    });
    const { client } = fixture;
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'level one' } });
    expect((await fixture.settled(threadId, turnId)).state).toBe('completed');
    // level one (depth 0) → level two (1) → level three (2): its own task is refused, and it says so in its answer.
    const refusedAt = fixture.requests.find((request) => firstUserText(request) === 'level three' && toolResults(request).length > 0)!;
    expect(toolResults(refusedAt)[0]).toMatchObject({ name: 'task', isError: true });
    expect(toolResults(refusedAt)[0]!.output).toMatch(/^the sub-agent's turn refused: delegation refused: this agent is already at depth 2 of at most 2/);

    // The deepest child, continued after a restart, is still at depth 2: its delegation is refused again.
    const deepest = (await client.call('thread.list', {})).threads.map((summary) => summary.id);
    const views = await Promise.all(deepest.map((id) => fixture!.thread(id)));
    const levelThree = views.find((view) => view.parent?.depth === 2)!;
    await fixture.restart();
    const again = await client.call('turn.start', { threadId: levelThree.id, input: { text: 'start again' } });
    const turn = await fixture.settled(levelThree.id, again.turnId);
    expect(turn.state).toBe('completed');
    expect(turn.messages[1].parts.find((part) => part.task)!.task).toMatchObject({ status: 'refused', error: expect.stringMatching(/at depth 2 of at most 2/) });
  });

  it('interrupting the parent while a child streams interrupts the child too: both settle, every call has a result', async () => {
    fixture = await openDelegation((request) =>
      firstUserText(request) === 'delegate something slow'
        ? { steps: [[task('general', 'write a long essay')], [{ text: 'never reached' }]] }
        : { chunkSize: 2, delayMs: 50, steps: [[{ text: 'An essay that goes on and on, far longer than anyone would wait for. '.repeat(20) }]] },
    );
    const { client } = fixture;
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'delegate something slow' } });
    // Wait until the child streams.
    let childThreadId = '';
    await expect
      .poll(
        async () => {
          const part = (await fixture!.thread(threadId)).turns[turnId]!.messages[1].parts.find((candidate) => candidate.task);
          childThreadId = part?.task?.childThreadId ?? '';
          if (!childThreadId) return '';
          const child = await fixture!.thread(childThreadId);
          return child.turns[child.turnIds[0] ?? '']?.messages[1].parts[0]?.text ?? '';
        },
        { timeout: 20_000, interval: 20 },
      )
      .toMatch(/An essay/);
    const asked = Date.now();
    await client.call('turn.interrupt', { threadId, turnId, reason: 'enough' });
    const parent = await fixture.settled(threadId, turnId);
    const child = await fixture.thread(childThreadId);
    const childTurn = await fixture.settled(childThreadId, child.turnIds[0]!);
    expect([parent.state, childTurn.state]).toEqual(['interrupted', 'interrupted']);
    expect(Math.max(parent.endedAt!, childTurn.endedAt!) - asked).toBeLessThan(5_000);
    expect(childTurn.interrupt?.reason).toMatch(/the turn that delegated it was interrupted: enough/);
    // Every call in the tree has a result; no child is left open.
    for (const part of [...parent.messages[1].parts, ...childTurn.messages[1].parts]) expect(['completed', 'error', 'interrupted']).toContain(part.state);
    expect((await client.call('thread.list', {})).threads.filter((summary) => summary.openTurnId !== null)).toEqual([]);
  });

  it("a child's approval is listed with its parent's, marked with the child, and a second client answers it", async () => {
    fixture = await openDelegation((request, step) => {
      if (firstUserText(request) === 'have it written') return { steps: [step === 0 ? [task('general', 'write notes.txt')] : [{ text: 'Written.' }]] };
      return { steps: [step === 0 ? [{ toolCall: { name: 'write', input: { path: 'notes.txt', content: 'notes\n' } } }] : [{ text: 'I wrote notes.txt.' }]] };
    });
    const { client } = fixture;
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'have it written' } });
    await expect.poll(async () => (await client.call('approval.list', { threadId })).approvals.length, { timeout: 20_000 }).toBe(1);
    const [approval] = (await client.call('approval.list', { threadId })).approvals;
    expect(approval).toMatchObject({ toolName: 'write', parentThreadId: threadId, preview: { kind: 'diff', path: 'notes.txt', created: true } });
    expect(approval!.threadId).not.toBe(threadId);

    const second = fixture.otherClient();
    await second.call('approval.respond', { threadId: approval!.threadId, approvalId: approval!.id, decision: 'approve' });
    expect((await fixture.settled(threadId, turnId)).state).toBe('completed');
    await second.bus.close();
    const last = fixture.requests.findLast((request) => firstUserText(request) === 'have it written')!;
    expect(toolResults(last)[0]!.output).toMatch(/^I wrote notes\.txt\./);
  });
});
