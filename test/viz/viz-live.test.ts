import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createLiveSource, type LiveSource } from '../../src/viz/live-source.ts';
import { startVizServer, type VizServer } from '../../src/viz/viz-server.ts';
import {
  describeBrowser,
  launchChromium,
  screenshotPath,
  textOf,
  waitForText,
  watchPage,
} from './browser.ts';
import { breakerScenario, SONNET_KEY } from './viz-scenario.ts';

let emulator: Emulator;
let clock: ManualClock;
let browser: Browser | undefined;
let live: LiveSource | undefined;
let viz: VizServer | undefined;

describeBrowser('live visualizer in Chromium (supervisor + emulator over real HTTP)', () => {
  beforeAll(async () => {
    clock = createManualClock(Date.parse('2026-08-17T07:32:00+09:00'));
    emulator = await startEmulator({ profile: { seed: 21 }, clock });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    live?.close();
    await viz?.close();
    await emulator?.close();
  });

  it('shows analyst cooling while sonnet is OPEN, then idle with sonnet CLOSED; nothing leaves 127.0.0.1', async () => {
    const scenario = breakerScenario(emulator, clock);
    live = createLiveSource(scenario.supervisor, { clock, sampleIntervalMs: 100 });
    viz = await startVizServer({ live, port: 0 });
    expect(viz.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1100 } });
    const watched = watchPage(page);
    await page.goto(viz.url);
    await page.waitForSelector('[data-testid="connection"][data-connected="true"]');
    await waitForText(page, 'mode', 'live');
    await waitForText(page, 'agent-analyst-state', 'idle');
    await waitForText(page, 'endpoint-sonnet-breaker', 'CLOSED');

    // sonnet answers 429 (Retry-After 30 s): its breaker opens, analyst cools without a token.
    await scenario.storm();
    await waitForText(page, 'agent-analyst-state', 'cooling');
    await waitForText(page, 'endpoint-sonnet-breaker', 'OPEN');
    // ops answered before storm() returned; the page redraws in batches (at most 4 a second), so its idle may land
    // a batch after analyst's cooling.
    await waitForText(page, 'agent-ops-state', 'idle');
    expect(await textOf(page, 'agent-analyst-state')).toBe('cooling');
    expect(await textOf(page, 'endpoint-sonnet-breaker')).toBe('OPEN');
    expect(await textOf(page, 'endpoint-flash-breaker')).toBe('CLOSED');
    expect(await textOf(page, 'agent-ops-state')).toBe('idle');
    expect(await textOf(page, 'agent-analyst-endpoint')).toBe('sonnet');
    // Simulated time has not moved: the countdowns read the full 30 s.
    expect(await textOf(page, 'endpoint-sonnet-open-until')).toBe('half-open in 30.0 s');
    expect(await textOf(page, 'endpoint-sonnet-cooldown')).toBe('30.0 s');
    expect(await textOf(page, 'agent-analyst-countdown')).toBe(' 30.0 s');
    expect(await textOf(page, 'tokens-held')).toBe('0');
    expect(await textOf(page, 'tokens-limit')).toBe('2');
    // The 429 is a marker on analyst's lane (ops has none); clicking it tells what, where and Retry-After.
    const lanes = () =>
      page.evaluate(() =>
        (
          window as unknown as {
            breakwaterViz: { lanes(): Record<string, { states: string[]; markers: number }> };
          }
        ).breakwaterViz.lanes(),
      );
    await page.waitForFunction(() => {
      const viz = (window as unknown as { breakwaterViz: { lanes(): Record<string, { markers: number }> } })
        .breakwaterViz;
      return viz.lanes().analyst?.markers === 1;
    });
    expect((await lanes()).ops?.markers).toBe(0);
    const point = await page.evaluate(() =>
      (
        window as unknown as {
          breakwaterViz: { markerPoint(a: string, i: number): { x: number; y: number } };
        }
      ).breakwaterViz.markerPoint('analyst', 0),
    );
    await page.mouse.click(point.x, point.y);
    await waitForText(page, 'inspect-status', '429');
    expect(await textOf(page, 'inspect-fault')).toBe('rate_limited');
    expect(await textOf(page, 'inspect-endpoint')).toBe('sonnet');
    expect(await textOf(page, 'inspect-retry-after')).toBe('30.0 s');

    // The statechart is drawn from the real machine, the selected agent's state lit.
    await page.click('[data-testid="agent-analyst"]');
    await page.waitForSelector('[data-testid="chart-state-cooling"][data-active="true"]');
    expect(await page.locator('[data-testid="chart-state-calling"]').getAttribute('data-active')).toBe(
      'false',
    );
    expect(await page.locator('[data-testid^="chart-state-degraded."]').count()).toBe(3);
    expect(await page.locator('[data-testid="chart-edge-idle-queued"]').count()).toBe(1);
    await page.waitForSelector('[data-testid="agent-snapshot"]');
    expect(await textOf(page, 'agent-snapshot')).toContain('"cooling"');
    await page.screenshot({ path: screenshotPath('viz-live.png'), fullPage: true });

    // The fault goes away; simulated time runs past the cooldown: probes close the breaker, analyst answers.
    const { analyst } = await scenario.recover();
    expect(analyst.outcome).toBe('answered');
    await waitForText(page, 'agent-analyst-state', 'idle');
    await waitForText(page, 'endpoint-sonnet-breaker', 'CLOSED');
    expect(await textOf(page, 'agent-analyst-state')).toBe('idle');
    expect(await textOf(page, 'endpoint-sonnet-breaker')).toBe('CLOSED');
    expect(await textOf(page, 'endpoint-sonnet-cooldown')).toBe('—');
    // Bucket levels come from the runtime's health: sonnet's were corrected from the emulator's headers. The page
    // redraws in batches (at most 4 a second), so the level may land a batch after the breaker's state: wait for it.
    await page.waitForFunction(
      (id) => /^\d+ \/ \d+$/.test(document.querySelector(`[data-testid="${id}"]`)?.textContent ?? ''),
      'endpoint-sonnet-rpm',
      { timeout: 20_000 },
    );
    expect(await textOf(page, 'endpoint-sonnet-rpm')).toMatch(/^\d+ \/ \d+$/);
    await page.waitForSelector('[data-testid="chart-state-idle"][data-active="true"]');
    // Clicking an agent lists its turns: prompt, answer, endpoint, not degraded.
    await page.waitForSelector('[data-testid="turn-row"]');
    const row = page.locator('[data-testid="turn-row"]').first();
    expect(await row.getAttribute('data-degraded')).toBe('false');
    expect(await row.locator('[data-testid="turn-prompt"]').textContent()).toBe(
      'What moved rates overnight?',
    );
    expect(await row.locator('[data-testid="turn-endpoint"]').textContent()).toBe('sonnet');
    expect(await row.locator('[data-testid="turn-answer"]').textContent()).toBe(
      analyst.answer.text.slice(0, 600),
    );
    await page.waitForFunction(() => {
      const viz = (window as unknown as { breakwaterViz: { lanes(): Record<string, { states: string[] }> } })
        .breakwaterViz;
      return viz.lanes().analyst?.states.at(-1) === 'idle';
    });
    const segments = (await lanes()).analyst!.states;
    expect(segments).toContain('cooling');
    expect(segments.at(-1)).toBe('idle');
    await page.screenshot({ path: screenshotPath('viz-live-recovered.png'), fullPage: true });

    const html = await page.content();
    expect(html).not.toContain(SONNET_KEY);
    expect(watched.errors).toEqual([]);
    expect(watched.requests.length).toBeGreaterThan(3);
    for (const url of watched.requests) expect(url.startsWith(`${viz.url}/`)).toBe(true);
    await page.close();
    await scenario.supervisor.stop();
  });
});
