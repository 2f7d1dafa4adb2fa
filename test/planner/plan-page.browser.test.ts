import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { planPage } from '../../src/planner/plan-page.ts';
import { planSchedule } from '../../src/planner/plan-schedule.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { describeBrowser, launchChromium, watchPage } from '../viz/browser.ts';

const dir = mkdtempSync(join(tmpdir(), 'bw-plan-page-'));
let browser: Browser | undefined;

describeBrowser('plan --html page in Chromium', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('renders one chart per limit, before and after against the limit, offline; screenshot', async () => {
    const plan = planSchedule(loadScenario('morning-peak-before-fixes'));
    const file = join(dir, 'plan.html');
    writeFileSync(file, planPage(plan, 'morning-peak-before-fixes'));
    const page = await browser!.newPage({ viewport: { width: 1000, height: 900 } });
    const seen = watchPage(page);
    const url = pathToFileURL(file).href;
    await page.goto(url);

    // 4 endpoints × (RPM, TPM), the concurrency tokens, the sonnet budget.
    const charts = page.locator('[data-testid="chart"]');
    expect(await charts.count()).toBe(10);
    for (let i = 0; i < 10; i++) {
      const chart = charts.nth(i);
      expect(await chart.locator('svg [data-testid="series-before"]').count()).toBe(1);
      expect(await chart.locator('svg [data-testid="series-after"]').count()).toBe(1);
      expect(await chart.locator('svg [data-testid="limit-line"]').count()).toBe(1);
      const box = await chart.locator('svg').boundingBox();
      expect(box!.width).toBeGreaterThan(100);
      expect(box!.height).toBeGreaterThan(50);
    }
    const budget = page.locator('[data-chart="budget-sonnet"]');
    expect(await budget.locator('[data-testid="limit-line"]').getAttribute('data-limit')).toBe('20');
    // The unplanned schedule is over the sonnet budget for many minutes; the planned one never is.
    expect(await budget.locator('[data-testid="over-minute"]').count()).toBeGreaterThan(30);
    expect(await page.locator('[data-testid="peak"]').textContent()).toMatch(
      /peak 07:00–08:00 Asia\/Seoul: \d+ LLM calls from \d+ jobs; breaks sonnet calls per hour \(\d+ > 20\)/,
    );
    expect(await page.locator('[data-testid="verdict-after"]').textContent()).toBe('fits every limit');
    expect(await page.locator('[data-testid="moves"] li').count()).toBe(plan.proposal.moves.length);

    // The "before" toggle hides the red series and nothing else.
    await page.locator('#show-before').uncheck();
    expect(await budget.locator('[data-testid="series-before"]').isVisible()).toBe(false);
    expect(await budget.locator('[data-testid="series-after"]').isVisible()).toBe(true);
    await page.locator('#show-before').check();

    const shot = join(dir, 'plan-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    process.stdout.write(`\n[plan page] screenshot: ${shot} (${statSync(shot).size} bytes)\n`);
    // Self-contained: the page asked for nothing but itself, and threw nothing.
    expect(seen.requests).toEqual([url]);
    expect(seen.errors).toEqual([]);
    await page.close();
  }, 60_000);
});
