import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Locator, type Page, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { InspectorRelay } from '../../inspector/index.ts';
import { chromiumPath, missingChromiumMessage } from '../support/chromium.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from '../workspace/workspaceFixture.ts';

const browserPath = chromiumPath();
const artifacts = join(import.meta.dirname, '..', 'artifacts');

if (!browserPath) {
  if (process.env.CI === 'true') throw new Error(missingChromiumMessage);
  console.warn(`${missingChromiumMessage}; skipping the inspector's phone test`);
}

/** A phone held upright: 390 CSS pixels wide (an iPhone 12 to 15), a touch screen, the page laid out for it. */
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 };

/** A file whose lines are far wider than a phone, in a folder whose path is too: what the approval's diff has to show. */
const wideLine = `export const aConstantWithAVeryLongName = "${'x'.repeat(180)}";\n`;
const wideFile = 'src/components/settings/notifications/NotificationPreferencesPanel.ts';
const command = 'npm test -- --reporter=verbose --testNamePattern="notification preferences are saved when the panel closes"';

let browser: Browser;
let context: BrowserContext | undefined;
let ws: WorkspaceFixture | undefined;
let relay: InspectorRelay | undefined;
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
  await relay?.stop();
  await ws?.dispose();
  context = undefined;
  relay = undefined;
  ws = undefined;
});

async function openPhonePage(path: string): Promise<Page> {
  context ??= await browser.newContext(phone);
  const page = await context.newPage();
  errors.length = 0;
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  await page.goto(`${relay!.url}${path.replace(/^\//, '')}?key=${relay!.key}`);
  return page;
}

/**
 * How wide the document is against the screen: a page wider than its
 * viewport scrolls sideways (and a phone's browser widens its layout
 * viewport, `innerWidth`, to take it in, zooming the page out), and which
 * elements stick out past the right edge without a box of their own that
 * scrolls them (those inside one are that box's to scroll).
 */
const widths = (page: Page) =>
  page.locator('html').evaluate((html) => {
    const view = html.ownerDocument.defaultView;
    const screen = html.clientWidth;
    const insideScroller = (element: typeof html): boolean => {
      for (let up = element.parentElement; up && up.tagName !== 'BODY'; up = up.parentElement) if (view.getComputedStyle(up).overflowX !== 'visible') return true;
      return false;
    };
    const sticking = [...html.querySelectorAll('body *')]
      .filter((element: typeof html) => element.getBoundingClientRect().right > screen + 0.5 && !insideScroller(element))
      .map((element: typeof html) => `${element.tagName.toLowerCase()}.${[...element.classList].join('.')}`);
    return { scrollWidth: html.scrollWidth, innerWidth: view.innerWidth, screen, sticking };
  });

/** Whether an element lies inside the screen's width, whole. */
const withinScreen = async (locator: Locator): Promise<boolean> => {
  const box = (await locator.boundingBox())!;
  return box.x >= 0 && box.x + box.width <= phone.viewport.width;
};

describe.skipIf(!browserPath)('the inspector on a phone (chromium at 390 px, touch)', () => {
  it('lays the thread page and the overview out without sideways scrolling, and an approval there is read in full and answered with a tap', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: wideFile, content: wideLine.repeat(4) } }, { name: 'bash', input: { command } }));
    relay = await new InspectorRelay({ bus: await ws.fx.connect(), prefix: ws.fx.prefix, port: 0 }).start();
    const { threadId } = await ws.client.call('thread.create', { title: 'notification preferences are lost when the settings panel closes' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'fix the preferences panel and run its test' } });

    // The thread page, followed on the phone while the turn asks to write the file.
    const page = await openPhonePage(`/threads/${threadId}`);
    await page.locator('[data-testid=status]', { hasText: 'live' }).waitFor();
    const card = page.locator('[data-testid=thread-approvals] [data-testid=approval]');
    await card.waitFor({ timeout: 20_000 });
    await page.locator('svg[data-testid=chart-turn] g.state.active[data-path="running.awaitingApproval"]').waitFor();
    await page.locator('[data-testid=timeline-row]').first().waitFor();
    expect(await widths(page)).toEqual({ scrollWidth: 390, innerWidth: 390, screen: 390, sticking: [] });
    // The charts are far wider than the screen: each scrolls inside its own box.
    const chartBox = page.locator('[data-machine=turn] .chart-scroll');
    expect(await chartBox.evaluate((box) => box.scrollWidth > box.clientWidth && box.clientWidth <= 390)).toBe(true);
    await page.screenshot({ path: join(artifacts, 'inspector-phone-thread.png') });

    // What it asks to do can be read there: the whole file name, the diff (whose long lines scroll in their box), the answers in reach.
    const diff = card.locator('[data-testid=approval-diff]');
    expect(await card.locator('.diff-file-head .path').textContent()).toBe(wideFile);
    expect(await withinScreen(card.locator('.diff-file-head .path'))).toBe(true);
    expect(await diff.locator('.diff-line.add').count()).toBe(4);
    expect(await withinScreen(diff)).toBe(true);
    const approve = card.locator('button[data-testid=approve]');
    expect(await withinScreen(approve)).toBe(true);
    expect((await approve.boundingBox())!.height).toBeGreaterThanOrEqual(40);
    expect((await card.boundingBox())!.y).toBeLessThan(phone.viewport.height);
    await approve.tap();
    await expect.poll(async () => (await ws!.client.call('approval.list', { threadId })).approvals.map((a) => a.toolName), { timeout: 20_000 }).toEqual(['bash']);
    expect(ws.repo.read(wideFile)).toBe(wideLine.repeat(4));

    // The next question, the command, answered from the overview, also on the phone: denied with a note typed there.
    const overview = await openPhonePage('/');
    const asked = overview.locator('[data-testid=approvals] [data-testid=approval]');
    await asked.locator('pre.command').waitFor({ timeout: 20_000 });
    await overview.locator('[data-testid=thread-row]').first().waitFor();
    expect(await widths(overview)).toEqual({ scrollWidth: 390, innerWidth: 390, screen: 390, sticking: [] });
    expect(await asked.locator('pre.command').textContent()).toBe(`$ ${command}`);
    expect(await withinScreen(asked.locator('pre.command'))).toBe(true);
    await overview.screenshot({ path: join(artifacts, 'inspector-phone-overview.png') });
    await asked.locator('[data-testid=deny-note]').tap();
    await overview.keyboard.type('not on my phone');
    await asked.locator('button[data-testid=deny]').tap();
    await expect.poll(async () => (await ws!.turn(threadId, turnId)).state, { timeout: 20_000 }).toBe('completed');
    expect((await ws.turn(threadId, turnId)).approvals.map(({ state, note }) => ({ state, note }))).toEqual([
      { state: expect.stringMatching(/granted|consumed/), note: null },
      { state: expect.stringMatching(/denied|consumed/), note: 'not on my phone' },
    ]);

    // The settled thread still fits.
    await page.bringToFront();
    await page.locator('svg[data-testid=chart-turn] g.state.active[data-path="completed"]').waitFor({ timeout: 20_000 });
    expect(await widths(page)).toEqual({ scrollWidth: 390, innerWidth: 390, screen: 390, sticking: [] });
    expect(errors).toEqual([]);
  }, 120_000);
});
