import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../domain/index.ts';
import { MSGPACK } from '../../bus/index.ts';
import { InspectorRelay } from '../../inspector/index.ts';
import { encodeLiveBatch } from '../../protocol/liveBatch.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { leaseByHand, turnEvents } from '../support/engineFixture.ts';
import { chromiumPath, missingChromiumMessage } from '../support/chromium.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from '../workspace/workspaceFixture.ts';

const browserPath = chromiumPath();
const artifacts = join(import.meta.dirname, '..', 'artifacts');

if (!browserPath) {
  // CI must run the browser test: there a missing chromium is a failure, not a skip.
  if (process.env.CI === 'true') throw new Error(missingChromiumMessage);
  console.warn(`${missingChromiumMessage}; skipping the inspector's browser tests`);
}

let browser: Browser;
let ws: WorkspaceFixture | undefined;
let bare: ApiFixture | undefined;
let relay: InspectorRelay | undefined;
/** One browser context per test: a page left from one test never polls into the next. */
let context: BrowserContext | undefined;
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
  await relay?.stop();
  await ws?.dispose();
  await bare?.dispose();
  relay = undefined;
  ws = undefined;
  bare = undefined;
});

async function openPage(path: string): Promise<Page> {
  context ??= await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const origin = relay!.url;
  errors.length = 0;
  // A script error or a failed request of the page fails the test: the page must work as shipped, offline.
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => {
    if (!request.url().startsWith(origin)) errors.push(`outside request: ${request.url()}`);
  });
  // As a person opens it: the printed address with its key, which the first load trades for the page's cookie and drops from the address.
  await page.goto(`${relay!.url}${path.replace(/^\//, '')}?key=${relay!.key}`);
  expect(page.url()).toBe(`${relay!.url}${path.replace(/^\//, '')}`);
  return page;
}

const turnState = (page: Page, path: string) => page.locator(`svg[data-testid=chart-turn] g.state.active[data-path="${path}"]`);
const timelineSeqs = (page: Page) => page.locator('[data-testid=timeline-row]').evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-seq'))));

describe.skipIf(!browserPath)('the inspector in a real browser (chromium, headless)', () => {
  it('follows a turn that asks for approval: the chart shows awaitingApproval, approve on the page, the turn completes, the timeline in order', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'echo inspected' } }));
    relay = await new InspectorRelay({ bus: await ws.fx.connect(), prefix: ws.fx.prefix, port: 0 }).start();
    const { threadId } = await ws.client.call('thread.create', { title: 'inspect me' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'run echo, with my approval' } });
    await expect.poll(async () => (await ws!.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
    const [approval] = (await ws.client.call('approval.list', { threadId })).approvals;

    const page = await openPage(`/threads/${threadId}`);
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    await turnState(page, 'running.awaitingApproval').waitFor();
    await page.locator(`svg[data-testid=chart-approval] g.state.active[data-path="pending"]`).waitFor();
    await page.locator(`[data-actor="turn:${turnId}"][data-state="running.awaitingApproval"]`).waitFor();
    const row = page.locator(`[data-testid=thread-approvals] [data-testid=approval][data-approval-id="${approval!.id}"]`);
    await expect.poll(() => row.textContent()).toContain('echo inspected');
    await page.screenshot({ path: join(artifacts, 'inspector-awaiting-approval.png') });

    await row.locator('button[data-testid=approve]').click();
    await turnState(page, 'completed').waitFor({ timeout: 20_000 });
    expect((await ws.turn(threadId, turnId)).state).toBe('completed');
    await page.locator(`svg[data-testid=chart-turn] g.edge.fired[data-event="turn.completed"]`).waitFor();
    await expect.poll(async () => (await page.locator(`[data-testid=thread-approvals] [data-approval-id="${approval!.id}"]`).count())).toBe(0);

    // The timeline holds every event of the log, in order: the turn's completion, then what side work wrote after it (the thread's title).
    await ws.fx.server.worker!.idle();
    const { events } = await ws.client.call('thread.events', { threadId, after: 0 });
    await expect.poll(() => page.locator('[data-testid=timeline-count]').textContent(), { timeout: 10_000 }).toContain(String(events.length));
    const visible = await timelineSeqs(page);
    expect(visible.at(-1)).toBe(events.at(-1)!.threadSeq);
    expect(visible).toEqual([...visible].sort((a, b) => a - b));
    const completed = events.findIndex(({ event }) => event.type === 'turn.completed');
    expect(events.slice(completed + 1).map(({ event }) => event.type)).toEqual(['activity.recorded', 'thread.renamed']);
    expect(await page.locator(`[data-testid=timeline-row][data-seq="${events[completed]!.threadSeq}"]`).getAttribute('data-type')).toBe('turn.completed');
    // Filtered by kind, the approval's own story, in the order the log has it.
    await page.locator('[data-testid=filter-kind]').fill('approval.');
    await expect
      .poll(() => page.locator('[data-testid=timeline-row]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-type'))))
      .toEqual(['approval.requested', 'approval.granted', 'approval.consumed']);
    await page.screenshot({ path: join(artifacts, 'inspector-completed.png') });
    expect(errors).toEqual([]);
  });

  it('answers a denial with its note from the page, and shows a refused second answer with the machine’s reason', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'touch nope.txt' } }));
    relay = await new InspectorRelay({ bus: await ws.fx.connect(), prefix: ws.fx.prefix, port: 0 }).start();
    const { threadId } = await ws.client.call('thread.create', {});
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'touch it' } });
    await expect.poll(async () => (await ws!.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
    const [approval] = (await ws.client.call('approval.list', { threadId })).approvals;

    // From the overview this time: the pending approval is listed with its thread.
    const page = await openPage('/');
    const row = page.locator(`[data-testid=approvals] [data-testid=approval][data-approval-id="${approval!.id}"]`);
    await row.waitFor();
    await page.locator(`[data-testid=threads] [data-testid=thread-row][data-thread-id="${threadId}"]`).waitFor();
    await row.locator('input[data-testid=deny-note]').fill('not in this repository');
    await row.locator('button[data-testid=deny]').click();
    await expect.poll(async () => (await ws!.turn(threadId, turnId)).state, { timeout: 20_000 }).toBe('completed');
    const decided = (await ws.turn(threadId, turnId)).approvals[0]!;
    expect(decided).toMatchObject({ state: expect.stringMatching(/denied|consumed/), note: 'not in this repository' });

    // A second answer is refused by the approval machine: the API says so, and the page shows it.
    const thread = await openPage(`/threads/${threadId}`);
    await thread.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    const answer = (await thread.evaluate(
      async ([id, approvalId]) => (await fetch('/api/approval.respond', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: id, approvalId, decision: 'once' }) })).json(),
      [threadId, approval!.id],
    )) as { error: { code: string } };
    expect(answer.error.code).toBe('illegal_transition');
    const refused = thread.locator('[data-testid=timeline-row][data-refused=true]');
    await expect.poll(() => refused.last().textContent(), { timeout: 10_000 }).toMatch(/does not accept "approval.granted"/);
    expect(errors.filter((error) => !error.includes('illegal_transition'))).toEqual([]);
  });

  it('shows hostile text as text: markup in a title and a prompt, a lone surrogate, a 128-character id', async () => {
    bare = await openApiFixture();
    const client = await bare.client();
    relay = await new InspectorRelay({ bus: await bare.connect(), prefix: bare.prefix, port: 0 }).start();
    const threadId = 'x'.repeat(128);
    const title = '<img src=x onerror="document.title=1"> \uD800 end';
    await client.call('thread.create', { threadId, title });
    await client.call('turn.start', { threadId, input: { text: '<script>document.title=2</script>' } });
    const page = await openPage(`/threads/${threadId}`);
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    await expect.poll(() => page.locator('body').textContent()).toContain('<img src=x onerror="document.title=1"> \uFFFD end');
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.title()).not.toMatch(/^[12]$/);
    await page.locator('[data-testid=timeline-row][data-type="turn.requested"]').waitFor();
    expect(errors).toEqual([]);
  });

  it('types the live text as the worker sends it, one batch of deltas per message, ahead of the log', async () => {
    // No worker: the turn is leased and opened by hand and its deltas published as a worker's batches, on its lease's channel.
    bare = await openApiFixture({ workers: { leaseTimeoutMs: 600_000 } });
    const client = await bare.client();
    const bus = await bare.connect();
    relay = await new InspectorRelay({ bus, prefix: bare.prefix, port: 0 }).start();
    const { threadId } = await client.call('thread.create', { title: 'typing' });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'type' } });
    const t = turnEvents(turnId);
    const partId = `${turnId}-s1-1`;
    const live = await leaseByHand(bare.server.engine, bare.server.subjects, threadId, turnId);
    await bare.server.engine.submit({ type: 'turn.record', commandId: `${threadId}-open`, threadId, turnId, events: [t.sessionStarted(), t.started(), t.step(1), { type: 'part.started', turnId, partId, step: 1, kind: 'text' }] });

    const page = await openPage(`/threads/${threadId}`);
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    const typed = (texts: string[]) => encodeLiveBatch(texts.map((text) => ({ turnId, step: 1, partId, kind: 'text', text })));
    bus.publish(live, typed(['typed ', 'live, ']), { headers: { 'content-type': MSGPACK } });
    bus.publish(live, typed(['in ', 'two ', 'batches']), { headers: { 'content-type': MSGPACK } });
    await expect.poll(() => page.locator('[data-testid=live-text]').textContent(), { timeout: 10_000 }).toContain('typed live, in two batches');
    expect(errors).toEqual([]);
  });

  it('keeps a thread of 10,000 events responsive (only the visible rows are in the page) and catches up across a relay restart', async () => {
    // No worker: the turn waits, and is fed by hand as a worker would.
    bare = await openApiFixture();
    const client = await bare.client();
    const bus = await bare.connect();
    relay = await new InspectorRelay({ bus, prefix: bare.prefix, port: 0 }).start();
    const { threadId } = await client.call('thread.create', { title: 'ten thousand' });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'stream' } });
    const t = turnEvents(turnId);
    const { engine } = bare.server;
    const write = async (tag: string, count: number) => {
      const events: DomainEvent[] = Array.from({ length: count }, (_, index) => ({ type: 'part.delta', turnId, partId: 'big', text: `${tag}${index} ` }));
      await engine.submit({ type: 'turn.record', commandId: `${threadId}-${tag}`, threadId, turnId, events });
    };
    await engine.submit({ type: 'turn.record', commandId: `${threadId}-open`, threadId, turnId, events: [t.sessionStarted(), t.started(), t.step(1), { type: 'part.started', turnId, partId: 'big', step: 1, kind: 'text' }] });
    for (let batch = 0; batch < 10; batch += 1) await write(`b${batch}-`, 1_000);
    const { seq } = await client.call('thread.get', { threadId });
    expect(seq).toBeGreaterThan(10_000);

    const page = await openPage(`/threads/${threadId}`);
    await expect.poll(() => page.locator('[data-testid=timeline-count]').textContent(), { timeout: 60_000 }).toContain(String(seq));
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    // Virtualised: a screenful of rows, not ten thousand.
    expect(await page.locator('[data-testid=timeline-row]').count()).toBeLessThan(200);
    // Scrolled to the middle, the middle is what is drawn.
    await page.locator('[data-testid=timeline]').evaluate((element) => {
      element.scrollTop = element.scrollHeight / 2;
      element.dispatchEvent(new Event('scroll'));
    });
    await expect
      .poll(async () => {
        const shown = await timelineSeqs(page);
        return shown.some((value) => Math.abs(value - seq / 2) < 100);
      })
      .toBe(true);
    expect(await page.locator('[data-testid=timeline-row]').count()).toBeLessThan(200);

    // The relay goes away and comes back on the same port; what was committed meanwhile arrives once.
    const port = relay.port;
    await relay.stop();
    await write('while-away-', 5);
    // Started again with its key, the relay takes the cookie the open page holds.
    relay = await new InspectorRelay({ bus, prefix: bare.prefix, port, key: relay.key }).start();
    await expect.poll(() => page.locator('[data-testid=timeline-count]').textContent(), { timeout: 30_000 }).toContain(String(seq + 5));
    await page.locator('[data-testid=timeline]').evaluate((element) => {
      element.scrollTop = element.scrollHeight;
      element.dispatchEvent(new Event('scroll'));
    });
    await expect.poll(async () => (await timelineSeqs(page)).at(-1)).toBe(seq + 5);
    const tail = await timelineSeqs(page);
    expect(new Set(tail).size).toBe(tail.length);
    expect(errors.filter((error) => !/ERR_CONNECTION_REFUSED|EventSource/i.test(error))).toEqual([]);
  });

  it('lends nothing to a page of another origin, even one the page’s cookie would be sent to: no approval changes', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'touch attacked.txt' } }));
    relay = await new InspectorRelay({ bus: await ws.fx.connect(), prefix: ws.fx.prefix, port: 0 }).start();
    const { threadId } = await ws.client.call('thread.create', {});
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'touch it' } });
    await expect.poll(async () => (await ws!.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
    const [approval] = (await ws.client.call('approval.list', { threadId })).approvals;
    // The person has the inspector open: the browser holds its cookie.
    const inspector = await openPage(`/threads/${threadId}`);
    await inspector.locator('[data-testid=status]', { hasText: 'live' }).waitFor();

    // Another local server's page: on 127.0.0.1 (the same site, so a SameSite cookie goes along) and on localhost (another site).
    // It holds a form that posts a JSON-looking body as text/plain, the one cross-origin POST no preflight stops.
    const field = `{"threadId":"${threadId}","approvalId":"${approval!.id}","decision":"always","x":"`;
    const hostilePage = `<!doctype html><title>elsewhere</title><form method="post" enctype="text/plain" action="${relay.url}api/approval.respond"><input type="hidden" name='${field}' value='"}'><button>go</button></form>`;
    const hostile = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(hostilePage));
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    const hostilePort = (hostile.address() as AddressInfo).port;
    try {
      // The same site gets the cookie along and is refused for its origin; another site does not even get the cookie.
      for (const [origin, refusal] of [
        [`http://127.0.0.1:${hostilePort}`, /"forbidden"/],
        [`http://localhost:${hostilePort}`, /"unauthorized"/],
      ] as const) {
        const page = await context!.newPage();
        await page.goto(`${origin}/`);
        const outcomes = await page.evaluate(
          async ({ target, threadId: id, approvalId }) => {
            const body = JSON.stringify({ threadId: id, approvalId, decision: 'always' });
            const tried: string[] = [];
            const attempt = async (what: string, run: () => Promise<Response>) => {
              try {
                const response = await run();
                tried.push(`${what}: ${response.type === 'opaque' ? 'opaque' : response.status}`);
              } catch {
                tried.push(`${what}: refused by the browser`);
              }
            };
            await attempt('simple POST', () => fetch(`${target}api/approval.respond`, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body }));
            await attempt('JSON POST', () => fetch(`${target}api/approval.respond`, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body }));
            await attempt('stream', () => fetch(`${target}stream/threads/${id}?after=0`, { credentials: 'include' }));
            return tried;
          },
          { target: relay.url, threadId, approvalId: approval!.id },
        );
        // The browser either refuses to let the page read the answer or to send the call at all; the relay does the rest.
        expect(outcomes).toEqual(['simple POST: opaque', 'JSON POST: refused by the browser', 'stream: refused by the browser']);
        // A form posted across origins is a navigation the page cannot read, but it is sent, cookie and all on the same site.
        await page.locator('button').click();
        await page.waitForURL(`${relay!.url}api/approval.respond`);
        expect(await page.locator('body').textContent()).toMatch(refusal);
        await page.close();
      }
      // A browser that never opened the printed address (another local user's, say) gets no page at all.
      const stranger = await browser.newContext();
      const response = await (await stranger.newPage()).goto(`${relay.url}threads/${threadId}`);
      expect(response!.status()).toBe(401);
      await stranger.close();
    } finally {
      await new Promise<void>((resolve) => hostile.close(() => resolve()));
    }
    const turn = await ws.turn(threadId, turnId);
    expect(turn.approvals[0]!.state).toBe('pending');
    expect((await ws.client.call('thread.get', { threadId })).thread.permissions.rules).toEqual([]);
    // The person's own page still answers it.
    await inspector.locator(`[data-testid=thread-approvals] [data-approval-id="${approval!.id}"] button[data-testid=deny]`).click();
    await expect.poll(async () => (await ws!.turn(threadId, turnId)).approvals[0]!.state, { timeout: 20_000 }).toMatch(/denied|consumed/);
  });
});

