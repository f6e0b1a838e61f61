import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub } from '../../bus/index.ts';
import type { TurnloomClient } from '../../client/index.ts';
import type { ProviderAdapter } from '../../domain/index.ts';
import { decodeLiveBatch } from '../../protocol/liveBatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { type TurnloomServerOptions, startTurnloomServer } from '../../services/turnloomServer.ts';
import { WorkspaceTools } from '../../adapters/tools/index.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { leaseKeyHash } from '../../services/engine/decide.ts';
import { rebuildFromLog } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

let cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function setup(providers?: Record<string, ProviderAdapter>, localWorker?: TurnloomServerOptions['localWorker']) {
  fx = await openApiFixture({ ...(providers ? { providers } : {}), ...(localWorker ? { localWorker } : {}), interruptDeadlineMs: 300 });
  const client = await fx.client();
  const { threadId } = await client.call('thread.create', { title: 'runner' });
  return { fx, client, threadId };
}

const turnState = async (client: TurnloomClient, threadId: string, turnId: string) => (await client.call('thread.get', { threadId })).thread.turns[turnId]!;

describe('the in-process turn runner', () => {
  it('runs the default scripted turn on a workspace: reasoning, text, a real listing (a read: nobody is asked), and an answer that says what it found', async () => {
    const workspace = tempDir('turnloom-default-script-');
    cleanups.push(() => workspace.remove());
    writeFileSync(join(workspace.path, 'notes.md'), 'x');
    mkdirSync(join(workspace.path, 'lib'));
    const { fx, client, threadId } = await setup({ scripted: new ScriptedProvider() }, { workspace: workspace.path, tools: new WorkspaceTools({ root: workspace.path }) });
    const live: LiveDelta[] = [];
    const bus = await fx.connect();
    bus.subscribe(fx.server.subjects.liveOf(threadId), (message) => live.push(...decodeLiveBatch(message.data)));
    await bus.flush();

    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'fix the login race' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');

    const { thread } = await client.call('thread.get', { threadId });
    const turn = thread.turns[turnId]!;
    expect(turn.messages[1].parts.map((part) => [part.kind, part.state, part.step])).toEqual([
      ['reasoning', 'completed', 1],
      ['text', 'completed', 1],
      ['tool', 'completed', 1],
      ['text', 'completed', 2],
    ]);
    expect(turn.messages[1].parts[2]!.tool).toMatchObject({ name: 'list', output: 'lib/\nnotes.md' });
    expect(turn.messages[1].parts[3]!.text).toContain("The workspace's top level holds lib/, notes.md.");
    expect(turn.messages[1].parts[3]!.text).toContain('fix the login race');
    expect(turn.approvals).toEqual([]);
    expect(turn.steps.map((step) => [step.outcome, step.stopReason])).toEqual([
      ['toolCalls', 'toolCalls'],
      ['stop', 'stop'],
    ]);
    expect(turn.usage.output).toBeGreaterThan(0);
    expect(thread.session.state).toBe('ready');
    // What was typed live is what was stored.
    const liveText = live.filter((delta) => delta.kind === 'text').map((delta) => delta.text).join('');
    expect(liveText).toBe(turn.messages[1].parts.filter((part) => part.kind === 'text').map((part) => part.text).join(''));
    expect(fx.store.readView(threadId)).toEqual(rebuildFromLog(fx.store, threadId));
  });

  it('names the workspace of the worker that runs the turn in the system prompt, also for a thread created over the API without one', async () => {
    const workspace = tempDir('turnloom-system-prompt-');
    cleanups.push(() => workspace.remove());
    const systems: string[] = [];
    const scripted = new ScriptedProvider((request) => {
      systems.push(request.system ?? '');
      return { steps: [[{ text: 'ok' }]] };
    });
    const { client, threadId } = await setup({ scripted }, { workspace: workspace.path, tools: new WorkspaceTools({ root: workspace.path }) });
    expect((await client.call('thread.get', { threadId })).thread.workspace).toBeNull();
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'hi' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    expect(systems[0]).toContain(`Workspace: ${workspace.path}\n`);
    expect(systems[0]).not.toContain('No workspace');
  });

  it('says honestly when the default scripted turn could not look: a worker without a workspace, or a listing a rule denies', async () => {
    const { client, threadId } = await setup({ scripted: new ScriptedProvider() });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'what is here?' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    const answer = (await turnState(client, threadId, turnId)).messages[1].parts.at(-1)!.text;
    expect(answer).toContain('I could not list the workspace: The tool did not run: no tool named list is available');
    expect(answer).not.toMatch(/holds/);

    await client.call('thread.configure', { threadId, rules: [{ tool: 'list', pattern: '*', decision: 'deny' }] });
    const denied = (await client.call('turn.start', { threadId, input: { text: 'and now?' } })).turnId;
    await expect.poll(async () => (await turnState(client, threadId, denied)).state, { timeout: 10_000 }).toBe('completed');
    const refused = (await turnState(client, threadId, denied)).messages[1].parts;
    expect(refused[2]).toMatchObject({ state: 'error', error: 'a rule of this thread denies this call' });
    expect(refused.at(-1)!.text).toMatch(/I could not list the workspace: .*a rule of this thread denies this call/);
  });

  it('interrupts mid-stream: the provider confirms, partial text is kept, the step and turn close', async () => {
    const script: ScriptInput = { chunkSize: 1, delayMs: 20, steps: [[{ text: 'a long answer that keeps on going and going '.repeat(5) }]] };
    const { client, threadId } = await setup({ scripted: new ScriptedProvider(script) });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'talk' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).messages[1].parts[0]?.text.length ?? 0, { timeout: 10_000 }).toBeGreaterThan(2);
    await client.call('turn.interrupt', { threadId, reason: 'enough' });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('interrupted');
    const turn = await turnState(client, threadId, turnId);
    expect(turn.interrupt).toEqual({ reason: 'enough', cause: 'provider' });
    expect(turn.messages[1].parts[0]).toMatchObject({ state: 'interrupted' });
    expect(turn.messages[1].parts[0]!.text.length).toBeGreaterThan(2);
    expect(turn.steps[0]!.outcome).toBe('interrupted');
    const { thread } = await client.call('thread.get', { threadId });
    expect(thread.session.state).toBe('ready');
  });

  it('interrupts a turn waiting for approval: the approval is cancelled and the tool never ran', async () => {
    const script: ScriptInput = { steps: [[{ toolCall: { name: 'deploy', input: { env: 'prod' }, approval: true, result: 'deployed' } }]] };
    const { client, threadId } = await setup({ scripted: new ScriptedProvider(script) });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'ship it' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('running.awaitingApproval');
    await client.call('turn.interrupt', { threadId });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('interrupted');
    const turn = await turnState(client, threadId, turnId);
    expect(turn.approvals[0]!.state).toBe('cancelled');
    expect(turn.messages[1].parts[0]!.tool).toMatchObject({ outcome: 'notStarted' });
    expect((await client.call('approval.list', { threadId })).approvals).toEqual([]);
  });

  it('abandons a provider that ignores the interrupt, and confirms it without waiting for the provider', async () => {
    const deaf: ProviderAdapter = {
      name: 'deaf',
      async *stream() {
        yield { type: 'turn.started', responseId: null, model: null };
        await new Promise(() => undefined); // ignores the abort signal, forever
      },
    };
    const { client, threadId } = await setup({ deaf });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'hang' }, provider: { name: 'deaf' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('running.streaming');
    await client.call('turn.interrupt', { threadId });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('interrupted');
    expect((await turnState(client, threadId, turnId)).interrupt?.cause).toBe('provider');
  });

  it('confirms at once the interrupt of a turn no worker holds', async () => {
    // No providers: no worker here, so nobody holds the turn.
    const { client, threadId } = await setup();
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'nobody takes this' } });
    await client.call('turn.interrupt', { threadId });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('interrupted');
    expect((await turnState(client, threadId, turnId)).interrupt?.cause).toBe('engine');
  });

  it('settles by the deadline when the worker holding the turn does not confirm the interrupt', async () => {
    const { client, threadId } = await setup();
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'orphan' } });
    // A worker took the turn and went silent (it never renews nor answers).
    const { engine } = fx!.server;
    const { toThreadSeq: token } = await engine.submit({ type: 'turn.lease', commandId: 'silent-lease', threadId, turnId, workerId: 'silent', keyHash: leaseKeyHash('silent-key-0000000') });
    await engine.submit({
      type: 'turn.record',
      commandId: 'worker-was-here',
      threadId,
      turnId,
      lease: { token, key: 'silent-key-0000000' },
      events: [
        { type: 'session.started', providerSessionId: null },
        { type: 'turn.started', turnId },
        { type: 'step.started', turnId, step: 1, digest: null },
      ],
    });
    await client.call('turn.interrupt', { threadId });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('interrupted');
    const turn = await turnState(client, threadId, turnId);
    expect(turn.interrupt?.cause).toBe('deadline');
    expect(turn.steps[0]!.outcome).toBe('interrupted');
  });

  it('expires an approval nobody answers: the tool does not run, the model is told, the turn goes on', async () => {
    const script: ScriptInput = { steps: [[{ toolCall: { name: 'deploy', input: {}, approval: true, result: 'deployed' } }], [{ text: 'Not deployed, then.' }]] };
    fx = await openApiFixture({ providers: { scripted: new ScriptedProvider(script) }, approvalTimeoutMs: 200 });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'ship it' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    const turn = await turnState(client, threadId, turnId);
    expect(turn.approvals[0]!.state).toBe('expired');
    expect(turn.messages[1].parts[0]).toMatchObject({ state: 'error', error: 'approval expired', tool: { output: null } });
    expect(turn.messages[1].parts[1]!.text).toBe('Not deployed, then.');
  });

  it('confirms a refusal as consumed, so no approval is left waiting for its second confirmation', async () => {
    const script: ScriptInput = { steps: [[{ toolCall: { name: 'rm', input: {}, approval: true, result: 'removed' } }], [{ text: 'Left it alone.' }]] };
    const { client, threadId } = await setup({ scripted: new ScriptedProvider(script) });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'clean' } });
    await expect.poll(async () => (await client.call('approval.list', { threadId })).approvals.length, { timeout: 10_000 }).toBe(1);
    const [approval] = (await client.call('approval.list', { threadId })).approvals;
    await client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'deny', note: 'no' });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    expect((await turnState(client, threadId, turnId)).approvals[0]!.state).toBe('consumed');
    expect(fx!.server.engine.liveStates(threadId)).toEqual({ 'session:session': 'ready' });
  });

  it('refuses a provider this server does not run, writing nothing; a turn whose provider vanished fails cleanly', async () => {
    const { fx, client, threadId } = await setup({ scripted: new ScriptedProvider({ steps: [[{ text: 'ok' }]] }) });
    const before = fx.store.lastSeq();
    const refused = await client.call('turn.start', { threadId, input: { text: 'x' }, provider: { name: 'nowhere' } }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'invalid_payload', details: { providers: ['scripted'] } });
    expect(fx.store.lastSeq()).toBe(before);

    // Accepted earlier by a server that knew it (here: written to the log directly), then run by one that does not.
    await fx.server.engine.submit({ type: 'turn.start', commandId: 'old', threadId, turnId: 'old', input: { text: 'x' }, provider: { name: 'nowhere', model: null } });
    await expect.poll(async () => (await turnState(client, threadId, 'old')).state, { timeout: 10_000 }).toBe('failed');
    expect((await turnState(client, threadId, 'old')).error).toMatch(/no provider "nowhere"/);
    expect((await client.call('thread.get', { threadId })).thread.session).toMatchObject({ state: 'error', failure: expect.stringMatching(/never started/) });
    const { turnId: next } = await client.call('turn.start', { threadId, input: { text: 'y' } });
    await expect.poll(async () => (await turnState(client, threadId, next)).state, { timeout: 10_000 }).toBe('completed');
  });

  it('keeps turns of different threads apart even when they share a turn id', async () => {
    // Long enough to outlast the worker's write window, so the log says it streams while it does.
    const script: ScriptInput = { chunkSize: 1, delayMs: 10, steps: [[{ text: 'a slow answer '.repeat(20) }]] };
    const { client } = await setup({ scripted: new ScriptedProvider(script) });
    const [a, b] = await Promise.all([client.call('thread.create', {}), client.call('thread.create', {})]);
    await client.call('turn.start', { threadId: a.threadId, turnId: 'same', input: { text: 'one' } });
    await client.call('turn.start', { threadId: b.threadId, turnId: 'same', input: { text: 'two' } });
    await expect.poll(async () => (await turnState(client, b.threadId, 'same')).state, { timeout: 10_000 }).toBe('running.streaming');
    await client.call('turn.interrupt', { threadId: b.threadId, turnId: 'same' });
    await expect.poll(async () => (await turnState(client, a.threadId, 'same')).state, { timeout: 10_000 }).toBe('completed');
    expect((await turnState(client, b.threadId, 'same')).state).toBe('interrupted');
  });

  it('stops the session: the running turn is interrupted and the session confirmed stopped', async () => {
    const { client, threadId } = await setup({ scripted: new ScriptedProvider({ chunkSize: 1, delayMs: 20, steps: [[{ text: 'x'.repeat(200) }]] }) });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'go' } });
    await expect.poll(async () => (await turnState(client, threadId, turnId)).state, { timeout: 10_000 }).toBe('running.streaming');
    await client.call('session.stop', { threadId });
    await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.session.state, { timeout: 10_000 }).toBe('stopped');
    expect((await turnState(client, threadId, turnId)).state).toBe('interrupted');
  });

  it('runs a turn that was only requested when the process stopped, once a runner starts', async () => {
    const dir = tempDir('turnloom-resume-');
    const hub = new InProcessHub();
    const first = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path) });
    await first.engine.submit({ type: 'thread.create', commandId: 'c', threadId: 'th', title: 't', workspace: null, owner: null });
    await first.engine.submit({ type: 'turn.start', commandId: 's', threadId: 'th', turnId: 'waiting', input: { text: 'later' }, provider: { name: 'scripted', model: null } });
    await first.stop();
    const second = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), providers: { scripted: new ScriptedProvider({ steps: [[{ text: 'done' }]] }) } });
    await expect.poll(async () => (await second.engine.getThread('th')).turns.waiting!.state, { timeout: 10_000 }).toBe('completed');
    await second.stop();
    dir.remove();
  });
});
