import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../cli/runCli.ts';
import { type TestRepo, makeRepo } from '../git/gitRepoFixture.ts';
import { openRelayPage } from '../support/relayPage.ts';
import { chromiumPath, missingChromiumMessage } from '../support/chromium.ts';
import { tempDir } from '../support/tempDir.ts';

const browserPath = chromiumPath();
const artifacts = join(import.meta.dirname, '..', 'artifacts');
const docs = join(import.meta.dirname, '..', '..', 'docs');
/** `TURNLOOM_UPDATE_DOCS=1 npx vitest run test/inspector/inspectorServe.test.ts` refreshes the README's pictures. */
const updateDocs = process.env.TURNLOOM_UPDATE_DOCS === '1';

if (!browserPath) {
  if (process.env.CI === 'true') throw new Error(missingChromiumMessage);
  console.warn(`${missingChromiumMessage}; skipping the inspector's browser tests`);
}

const original = 'export function greet(name) {\n  return "hello " + name;\n}\n\nexport const farewell = (name) => "bye " + name;\n';
const before = 'export function greet(name) {\n  return "hello " + name;\n}';
const after = "/** Greets a person by name; a blank name greets the world. */\nexport function greet(name = 'world') {\n  const who = name.trim() || 'world';\n  return `Hello, ${who}!`;\n}";
const edited = original.replace(before, after);
const edit = { name: 'edit', input: { path: 'greet.js', oldText: before, newText: after } };
/** The lines the edit removes and adds, as a diff shows them. */
const removed = ['export function greet(name) {', '  return "hello " + name;'];
const added = ['/** Greets a person by name; a blank name greets the world. */', "export function greet(name = 'world') {", "  const who = name.trim() || 'world';", '  return `Hello, ${who}!`;'];

/** A command that prints, takes a moment, and fails. */
const slowFailure = `node -e "console.log('checking'); setTimeout(() => process.exit(3), 2000)"`;

/** What the scripted provider plays, one model call a step (docs/providers.md): real tool calls on the workspace, asking as the thread's mode says. */
const script = (steps: unknown[][]) => JSON.stringify({ chunkSize: 24, delayMs: 5, steps });

let browser: Browser;
let context: BrowserContext | undefined;
const serves: RunningCli[] = [];
const cleanups: Array<() => void> = [];
const errors: string[] = [];

beforeAll(async () => {
  if (browserPath) browser = await chromium.launch({ executablePath: browserPath, args: ['--no-sandbox'] });
  mkdirSync(artifacts, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await context?.close();
  context = undefined;
  for (const serve of serves.splice(0)) await stop(serve);
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function stop(serve: RunningCli): Promise<void> {
  serve.child.kill('SIGTERM');
  const { code } = await serve.exited;
  expect(code, serve.output()).toBe(0);
}

/** A git repository with one committed file, and a folder for turnloom's data beside it. */
function workspace(): { repo: TestRepo; dir: string } {
  const repo = makeRepo();
  repo.write('greet.js', original);
  repo.git('add', '.');
  repo.git('commit', '-qm', 'greet');
  const dir = tempDir('turnloom-inspector-serve-');
  cleanups.push(repo.remove, dir.remove);
  return { repo, dir: dir.path };
}

/** `turnloom serve --inspect 0` as a person starts it, and the page address it prints. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<{ process: RunningCli; pageUrl: string }> {
  const started = startCli(['serve', '--inspect', '0', ...args], { cwd: args[args.indexOf('--workspace') + 1]!, env, deadlineMs: null });
  serves.push(started);
  await expect.poll(() => /inspector: (http:\/\/127\.0\.0\.1:\d+\/\?key=\S+)/.exec(started.output())?.[1], { timeout: 30_000 }).toBeDefined();
  return { process: started, pageUrl: /inspector: (http:\/\/127\.0\.0\.1:\d+\/\?key=\S+)/.exec(started.output())![1]! };
}

async function openPage(pageUrl: string): Promise<Page> {
  // The docs' close-up of an approval card is taken at twice the density, so its diff stays sharp; whole pages at the page's own size.
  context ??= await browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: updateDocs ? 2 : 1 });
  const page = await context.newPage();
  const origin = new URL(pageUrl).origin;
  errors.length = 0;
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => {
    if (!request.url().startsWith(origin)) errors.push(`outside request: ${request.url()}`);
  });
  await page.goto(pageUrl);
  return page;
}

/** A call the page's own script makes, answered as the relay answers it. */
const pageCall = (page: Page, method: string, params: unknown) =>
  page.evaluate(
    async ([name, body]) => (await fetch(`/api/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json(),
    [method, params] as const,
  ) as Promise<{ result?: Record<string, unknown>; error?: { code: string; message: string } }>;

/** A step that delegates: every turn of every thread plays it first, so the child delegates again and the grandchild's call is refused at depth 2. */
const lookAround = { agent: 'general', prompt: 'Look around the workspace and say what <main> holds.', description: 'a look around' };
const delegate = [{ text: 'A sub-agent will look around.' }, { toolCall: { name: 'task', input: lookAround } }];

type TurnStates = { thread: { turnIds: string[]; turns: Record<string, { state: string; messages: Array<{ parts: Array<{ task: { childThreadId: string } | null }> }> }> } };

/** A thread with one turn started on it through the page's API, and the page opened on it. */
async function delegatingThread(page: Page, pageUrl: string): Promise<{ threadId: string; view: () => Promise<TurnStates['thread']> }> {
  const { threadId } = (await pageCall(page, 'thread.create', { title: 'delegates' })).result as { threadId: string };
  expect((await pageCall(page, 'turn.start', { threadId, input: { text: 'have a look around' } })).error).toBeUndefined();
  await page.goto(new URL(`/threads/${threadId}`, pageUrl).href);
  await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
  const view = async () => ((await pageCall(page, 'thread.get', { threadId })).result as unknown as TurnStates).thread;
  return { threadId, view };
}

const subagent = (page: Page, depth: number) => page.locator(`[data-testid=subagent][data-depth="${depth}"]`);
/** A row's own line (a row holds its children's rows too). */
const line = (row: ReturnType<typeof subagent>) => row.locator(':scope > .subagent-line');

describe.skipIf(!browserPath)('turnloom serve --inspect alone, in a real browser', () => {
  it('makes a thread, starts a turn from the composer, shows the edit’s diff on its approval, then the turn’s diff, and reverts it', async () => {
    const { repo, dir } = workspace();
    const scriptFile = join(dir, 'script.json');
    writeFileSync(scriptFile, script([
      [{ text: 'I will make the greeting friendlier, and let a blank name greet the world.' }, { toolCall: edit }],
      [{ toolCall: { name: 'bash', input: { command: slowFailure } } }],
      [{ text: 'Done: greet() says "Hello, name!" and greets the world when the name is blank.' }],
    ]));
    const { pageUrl } = await serve(['--workspace', repo.path, '--data', join(dir, 'data'), '--script', scriptFile]);
    const page = await openPage(pageUrl);

    // The overview: a new thread, and the page goes to it.
    await page.locator('[data-testid=who]', { hasText: 'local' }).waitFor();
    await page.locator('[data-testid=new-thread-title]').fill('friendlier greeting');
    await page.locator('[data-testid=new-thread]').click();
    await page.waitForURL(/\/threads\/thr_[0-9a-f]+$/);
    const threadId = new URL(page.url()).pathname.split('/').pop()!;
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();

    // The composer starts the turn; the edit asks, and its card shows the diff the worker worked out.
    await page.locator('[data-testid=composer-input]').fill('make the greeting friendlier');
    await page.locator('[data-testid=composer-start]').click();
    await expect.poll(() => page.locator('[data-testid=composer-result]').textContent(), { timeout: 10_000 }).toMatch(/^started turn /);
    const card = page.locator('[data-testid=thread-approvals] [data-testid=approval]');
    const diff = card.locator('[data-testid=approval-diff]');
    await diff.waitFor({ timeout: 20_000 });
    expect(await diff.locator('.diff-file').getAttribute('data-path')).toBe('greet.js');
    expect(await diff.locator('.diff-line[data-kind=del] .code').allTextContents()).toEqual(removed);
    expect(await diff.locator('.diff-line[data-kind=add] .code').allTextContents()).toEqual(added);
    expect(repo.read('greet.js')).toBe(original);
    await page.locator('[data-testid=fit-charts]').check();
    await page.locator('svg[data-testid=chart-turn].fitted g.state.active[data-path="running.awaitingApproval"]').waitFor();
    // Fitted, the turn chart shows whole at full size, and labels the edges that can leave the state it is in.
    const turnChart = await page.locator('svg[data-testid=chart-turn]').boundingBox();
    const column = await page.locator('[data-machine=turn] .chart-scroll').boundingBox();
    expect(turnChart!.width).toBeLessThanOrEqual(column!.width);
    const shown = await page.locator('svg[data-testid=chart-turn] g.edge-label.shown').evaluateAll((labels) => labels.map((label) => label.textContent));
    expect(shown).toEqual(expect.arrayContaining(['approval.granted', 'approval.denied']));
    const labelHeight = await page.locator('svg[data-testid=chart-turn] g.edge-label.shown text').first().evaluate((text) => text.getBoundingClientRect().height);
    expect(labelHeight).toBeGreaterThanOrEqual(10);
    await page.locator('[data-machine=turn]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(artifacts, 'inspector-serve-approval.png') });
    if (updateDocs) {
      await page.screenshot({ path: join(docs, 'inspector.png'), scale: 'css' });
      await card.screenshot({ path: join(docs, 'inspector-approval.png') });
    }
    await card.locator('button[data-testid=approve]').click();

    // The command asks next, with its line and folder; it exits 3, which the turn shows as a result, not a broken part.
    const command = card.locator('[data-testid=approval-preview][data-kind=command]');
    await command.waitFor({ timeout: 20_000 });
    expect(await command.textContent()).toContain(`$ ${slowFailure}`);
    expect(repo.read('greet.js')).toBe(edited);
    await card.locator('button[data-testid=approve]').click();
    // While it runs, what it printed so far (the live channel's latest output); then its whole output, and how it ended.
    await expect.poll(() => page.locator('[data-testid=tool-call][data-outcome=running] [data-testid=tool-printing]').textContent(), { timeout: 20_000 }).toContain('checking');
    const exited = page.locator('[data-testid=tool-call][data-outcome=exited]');
    await exited.waitFor({ timeout: 20_000 });
    expect(await exited.locator('summary .tool-name').textContent()).toBe('bash');
    expect(await exited.locator('summary .tool-headline').textContent()).toBe(slowFailure);
    expect(await exited.locator('summary .tool-outcome').textContent()).toBe('exited 3');
    expect(await exited.locator('[data-testid=tool-output]').textContent()).toBe('checking\nexit code 3');
    expect(await page.locator('[data-testid=tool-call][data-outcome=ok] summary').allTextContents()).toEqual(['editgreet.jsdone']);

    // The turn ends; its diff opens from the thread bar, and reverts after a confirmation.
    await page.locator('svg[data-testid=chart-turn] g.state.active[data-path="completed"]').waitFor({ timeout: 20_000 });
    await page.locator('[data-testid=open-diff]').click();
    const view = page.locator('[data-testid=diff-view]');
    await view.locator('.diff-file[data-path="greet.js"]').waitFor();
    expect(await view.locator('.diff-line[data-kind=add] .code').allTextContents()).toEqual(added);
    expect(await view.locator('.diff-summary').textContent()).toBe('1 file +4 −2');
    await page.screenshot({ path: join(artifacts, 'inspector-serve-diff.png') });
    if (updateDocs) await page.screenshot({ path: join(docs, 'inspector-diff.png'), scale: 'css' });
    await view.locator('[data-testid=revert]').click();
    await view.locator('[data-testid=revert-cancel]').click();
    expect(repo.read('greet.js')).toBe(edited);
    await view.locator('[data-testid=revert]').click();
    await view.locator('[data-testid=revert-confirm]').click();
    await expect.poll(() => view.locator('[data-testid=revert-done]').textContent(), { timeout: 30_000 }).toMatch(/^Reverted 1 file \+2 −4/);
    expect(repo.read('greet.js')).toBe(original);
    await view.locator('[data-testid=diff-close]').click();
    await page.locator('[data-testid=open-diff]', { hasText: 'reverted' }).waitFor();
    // Reopened, the diff says it was reverted and offers no second revert; one asked for anyway is refused, and changes nothing.
    await page.locator('[data-testid=open-diff]').click();
    await view.locator('.diff-file[data-path="greet.js"]').waitFor();
    expect(await view.locator('.dialog-footer').textContent()).toContain('Reverted');
    expect(await view.locator('[data-testid=revert]').count()).toBe(0);
    const [turnId] = ((await pageCall(page, 'thread.get', { threadId })).result!.thread as { turnIds: string[] }).turnIds;
    expect((await pageCall(page, 'checkpoint.revert', { threadId, checkpointId: turnId })).error).toBeDefined();
    expect(repo.read('greet.js')).toBe(original);
    expect(errors).toEqual([]);
  }, 120_000);

  it('steers text into the running turn and queues the next one from the box, each as the API answered', async () => {
    const { repo, dir } = workspace();
    const scriptFile = join(dir, 'script.json');
    // A canned call that takes a while: the turn runs long enough to be written to.
    writeFileSync(scriptFile, script([[{ text: 'Looking.' }, { toolCall: { name: 'bash', input: { command: 'sleep' }, result: 'slept', durationMs: 4_000 } }], [{ text: 'All done.' }]]));
    const { pageUrl } = await serve(['--workspace', repo.path, '--data', join(dir, 'data'), '--script', scriptFile]);
    const page = await openPage(pageUrl);
    await page.locator('[data-testid=new-thread]').click();
    await page.waitForURL(/\/threads\/thr_[0-9a-f]+$/);
    const threadId = new URL(page.url()).pathname.split('/').pop()!;
    const box = page.locator('[data-testid=composer-input]');
    const said = page.locator('[data-testid=composer-result]');
    await box.fill('first');
    await box.press('Enter');
    await expect.poll(() => said.textContent(), { timeout: 10_000 }).toMatch(/^started turn /);

    // While it runs the box steers (Enter) or queues.
    await page.locator('[data-testid=composer-steer]').waitFor({ timeout: 10_000 });
    await box.fill('also this');
    await box.press('Enter');
    await expect.poll(() => said.textContent(), { timeout: 10_000 }).toMatch(/^steered into turn /);
    await box.fill('then that');
    await page.locator('[data-testid=composer-queue]').click();
    await expect.poll(() => said.textContent(), { timeout: 10_000 }).toMatch(/^queued as turn /);
    expect(await box.inputValue()).toBe('');

    // The running turn took the steered text as the user's; the queued one ran after it, on its own input.
    type View = { thread: { turnIds: string[]; openTurnId: string | null; turns: Record<string, { state: string; messages: Array<{ parts: Array<{ text: string }> }> }> } };
    const view = async () => (await pageCall(page, 'thread.get', { threadId })).result as unknown as View;
    await expect.poll(async () => { const { thread } = await view(); return thread.turnIds.map((id) => thread.turns[id]!.state); }, { timeout: 60_000 }).toEqual(['completed', 'completed']);
    const { thread } = await view();
    const inputs = thread.turnIds.map((id) => thread.turns[id]!.messages[0]!.parts.map((part) => part.text));
    expect(inputs).toEqual([['first', 'also this'], ['then that']]);
    await page.locator('[data-testid=composer-start]').waitFor();
    expect(errors).toEqual([]);
  }, 120_000);

  it('gives a page whose token may only read no composer, no new thread and no revert, and the API refuses its calls', async () => {
    const { repo, dir } = workspace();
    const data = join(dir, 'data');
    const scriptFile = join(dir, 'script.json');
    writeFileSync(scriptFile, script([[{ toolCall: edit }], [{ text: 'Edited.' }]]));

    // First as the local user: a thread whose edits run without asking, and a turn that changes greet.js.
    const open = await serve(['--workspace', repo.path, '--data', data, '--script', scriptFile]);
    const relay = await openRelayPage(open.pageUrl);
    const post = async (method: string, params: unknown) =>
      ((await (await relay.fetch(`api/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) })).json()) as { result: Record<string, string> }).result;
    const { threadId } = await post('thread.create', { title: 'read me', mode: 'auto-edits' });
    const { turnId } = await post('turn.start', { threadId: threadId!, input: { text: 'edit it' } });
    await expect.poll(async () => ((await post('thread.get', { threadId: threadId! })) as unknown as { thread: { turns: Record<string, { state: string }> } }).thread.turns[turnId!]!.state, { timeout: 30_000 }).toBe('completed');
    expect(repo.read('greet.js')).toBe(edited);
    await stop(serves.pop()!);

    // Then with tokens: the relay's names the same principal with only read.
    const token = 'reader-token-0123456789';
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: { [token]: { principal: 'local', scopes: ['read'] } } }));
    const { pageUrl } = await serve(['--workspace', repo.path, '--data', data, '--script', scriptFile, '--auth', tokens], { TURNLOOM_TOKEN: token });
    const page = await openPage(pageUrl);
    await page.locator('[data-testid=who]', { hasText: 'local · read' }).waitFor();
    await page.locator(`[data-testid=thread-row][data-thread-id="${threadId}"]`).waitFor();
    expect(await page.locator('[data-testid=new-thread]').count()).toBe(0);

    await page.goto(new URL(`/threads/${threadId}`, pageUrl).href);
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    await page.locator('[data-testid=open-diff]').click();
    await page.locator('[data-testid=diff-view] .diff-file[data-path="greet.js"]').waitFor();
    expect(await page.locator('[data-testid=composer]').count()).toBe(0);
    expect(await page.locator('[data-testid=revert]').count()).toBe(0);
    expect(await page.locator('[data-testid=open-diff]').isVisible()).toBe(true);

    for (const [method, params] of [
      ['turn.start', { threadId, input: { text: 'sneaky' } }],
      ['checkpoint.revert', { threadId, checkpointId: turnId }],
      ['thread.create', { title: 'mine' }],
    ] as const) {
      const answer = await pageCall(page, method, params);
      expect(answer.error, method).toMatchObject({ code: 'forbidden', message: expect.stringContaining('lacks the "operate" scope') });
    }
    expect(repo.read('greet.js')).toBe(edited);
    expect(errors).toEqual([]);
  }, 120_000);
  it('shows the tree of a thread’s sub-agents with their statuses, opens a child, which links back, and reads a task call as a delegation', async () => {
    const { repo, dir } = workspace();
    const scriptFile = join(dir, 'script.json');
    writeFileSync(scriptFile, script([delegate, [{ text: 'Done.' }]]));
    const { pageUrl } = await serve(['--workspace', repo.path, '--data', join(dir, 'data'), '--script', scriptFile]);
    const page = await openPage(pageUrl);
    const { threadId, view } = await delegatingThread(page, pageUrl);
    await expect.poll(async () => { const thread = await view(); return thread.turnIds.map((id) => thread.turns[id]!.state); }, { timeout: 60_000 }).toEqual(['completed']);
    const thread = await view();
    const childId = thread.turns[thread.turnIds[0]!]!.messages[1]!.parts.find((part) => part.task)!.task!.childThreadId;

    // The tree: the child, nested under it the grandchild, and under that the call refused at depth 2, which made no thread.
    const child = subagent(page, 1);
    await expect.poll(() => subagent(page, 3).getAttribute('data-status'), { timeout: 15_000 }).toBe('refused');
    expect(await child.count()).toBe(1);
    // The child's own status comes with the page's watch of this thread, the grandchild's from a fetch of the child: either may land first.
    await expect.poll(() => child.getAttribute('data-status'), { timeout: 15_000 }).toBe('completed');
    expect(await child.getAttribute('data-thread-id')).toBe(childId);
    expect(await line(child).locator('.agent').textContent()).toBe('general');
    expect(await line(child).locator('.what').textContent()).toBe('a look around');
    // The grandchild's status is in the child's view, which the page fetches again until it settles: the view it holds
    // may be from before the grandchild ended (as on a loaded machine, where the next fetch comes after this line).
    const grandchild = child.locator('[data-testid=subagent][data-depth="2"]');
    await expect.poll(() => grandchild.getAttribute('data-status'), { timeout: 15_000 }).toBe('completed');
    const refused = grandchild.locator('[data-testid=subagent][data-depth="3"]');
    expect(await line(refused).locator('.task-status').textContent()).toBe('refused');
    expect(await line(refused).locator('[data-testid=subagent-link]').count()).toBe(0);
    expect(await refused.locator('.subagent-error').textContent()).toMatch(/^delegation refused: this agent is already at depth 2 of at most 2/);

    // The parent's task call: the agent, what it was asked (as text, markup and all), the child's thread and its answer.
    const card = page.locator('[data-testid=tool-call]', { has: page.locator('.tool-name', { hasText: /^task$/ }) });
    expect(await card.getAttribute('data-outcome')).toBe('ok');
    expect(await card.locator('summary .tool-headline').textContent()).toBe('general: a look around');
    expect(await card.locator('summary .tool-outcome').textContent()).toBe('completed');
    expect(await card.locator('[data-testid=task-prompt]').textContent()).toBe(lookAround.prompt);
    expect(await card.locator('[data-testid=task-prompt] main').count()).toBe(0);
    expect(await card.locator('[data-testid=task-thread]').getAttribute('href')).toBe(`/threads/${childId}`);
    const answer = card.locator('[data-testid=task-answer]');
    expect(await answer.evaluate((details) => details.hasAttribute('open'))).toBe(true);
    expect(await answer.locator('pre').textContent()).toBe('Done.');
    await page.screenshot({ path: join(artifacts, 'inspector-serve-subagents-done.png') });

    // The child's page, opened from the tree: the link back to its parent, its depth, and its own subtree one level up.
    await line(child).locator('[data-testid=subagent-link]').click();
    await page.waitForURL(new RegExp(`/threads/${childId}$`));
    const up = page.locator('[data-testid=delegated-by]');
    await up.waitFor();
    expect(await up.locator('[data-testid=parent-thread]').getAttribute('href')).toBe(`/threads/${threadId}`);
    expect(await up.locator('[data-testid=depth]').textContent()).toBe('depth 1');
    await expect.poll(() => subagent(page, 3).getAttribute('data-status'), { timeout: 15_000 }).toBe('refused');
    await expect.poll(() => subagent(page, 2).getAttribute('data-status'), { timeout: 15_000 }).toBe('completed');
    expect(await subagent(page, 1).count()).toBe(0);
    await up.locator('[data-testid=parent-thread]').click();
    await page.waitForURL(new RegExp(`/threads/${threadId}$`));
    expect(await page.locator('[data-testid=delegated-by]').isVisible()).toBe(false);
    expect(errors).toEqual([]);
  }, 120_000);

  it('lists the sub-agents’ pending approvals on the parent’s page, marked as theirs, and answers them there', async () => {
    const { repo, dir } = workspace();
    const scriptFile = join(dir, 'script.json');
    // After delegating, every thread runs a command that asks under the default mode: the grandchild first, then the child, then the parent.
    const check = { toolCall: { name: 'bash', input: { command: 'npm test' }, result: '12 passed', approval: true } };
    writeFileSync(scriptFile, script([delegate, [check], [{ text: 'Done.' }]]));
    const { pageUrl } = await serve(['--workspace', repo.path, '--data', join(dir, 'data'), '--script', scriptFile]);
    const page = await openPage(pageUrl);
    const { threadId, view } = await delegatingThread(page, pageUrl);
    await subagent(page, 1).waitFor({ timeout: 20_000 });
    const childId = (await subagent(page, 1).getAttribute('data-thread-id'))!;
    const card = page.locator('[data-testid=thread-approvals] [data-testid=approval]');

    // The grandchild's: it is answered on its own thread, and says whose it is.
    await card.waitFor({ timeout: 30_000 });
    const grandchildId = (await subagent(page, 2).getAttribute('data-thread-id'))!;
    expect(await card.getAttribute('data-thread-id')).toBe(grandchildId);
    const mark = card.locator('[data-testid=approval-subagent]');
    expect(await mark.textContent()).toMatch(/^sub-agent thread \S+, delegated by \S+$/);
    expect(await mark.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href')))).toEqual([`/threads/${grandchildId}`, `/threads/${childId}`]);
    expect(await subagent(page, 2).getAttribute('data-status')).toBe('running');
    await expect.poll(() => line(subagent(page, 2)).locator('[data-testid=subagent-asking]').textContent(), { timeout: 15_000 }).toBe('waits for an approval');
    expect(await line(subagent(page, 1)).locator('[data-testid=subagent-asking]').count()).toBe(0);
    await card.locator('button[data-testid=approve]').click();

    // Then the child's, once the grandchild answered it; the tree shows who is done and who runs.
    await page.locator(`[data-testid=thread-approvals] [data-testid=approval][data-thread-id="${childId}"]`).waitFor({ timeout: 30_000 });
    await expect.poll(() => subagent(page, 2).getAttribute('data-status'), { timeout: 15_000 }).toBe('completed');
    expect(await subagent(page, 1).getAttribute('data-status')).toBe('running');
    expect(await subagent(page, 3).getAttribute('data-status')).toBe('refused');
    await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(1);
    expect(await card.locator('[data-testid=approval-subagent] a').last().getAttribute('href')).toBe(`/threads/${threadId}`);
    await expect.poll(() => line(subagent(page, 1)).locator('[data-testid=subagent-asking]').count(), { timeout: 15_000 }).toBe(1);
    // While its sub-agent works, the parent's task call is open on the link to it.
    expect(await page.locator('[data-testid=tool-call][data-outcome=running] [data-testid=task-thread]').getAttribute('href')).toBe(`/threads/${childId}`);
    await page.screenshot({ path: join(artifacts, 'inspector-serve-subagents.png') });
    if (updateDocs) await page.screenshot({ path: join(docs, 'inspector-subagents.png'), scale: 'css' });
    await card.locator('button[data-testid=approve]').click();

    // Last the parent's own, which is not marked; answered, the whole tree completes.
    await page.locator(`[data-testid=thread-approvals] [data-testid=approval][data-thread-id="${threadId}"]`).waitFor({ timeout: 30_000 });
    await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(1);
    expect(await card.locator('[data-testid=approval-subagent]').count()).toBe(0);
    await card.locator('button[data-testid=approve]').click();
    await expect.poll(async () => { const thread = await view(); return thread.turnIds.map((id) => thread.turns[id]!.state); }, { timeout: 60_000 }).toEqual(['completed']);
    await expect.poll(() => subagent(page, 1).getAttribute('data-status'), { timeout: 15_000 }).toBe('completed');
    await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(0);
    expect(errors).toEqual([]);
  }, 120_000);
});
