import { mkdirSync, mkdtempSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runRunCommand } from '../../src/cli/commands/run-command.ts';
import { runVizCommand } from '../../src/cli/commands/viz-command.ts';
import type { RunReport } from '../../src/report/report-types.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import type { EventRecord } from '../../src/store/store-types.ts';
import { waitFor } from '../support/wait-for.ts';
import { describeBrowser, launchChromium, textOf, waitForText, watchPage } from './browser.ts';

/*
 * agent8-storm, recorded for real: `breakwater run --viz` (the run command, the emulator over real HTTP,
 * PGlite) with the page open in Chromium while it runs, then `breakwater viz` (the runs page) on the same
 * store. The scenario is the shipped one, sped up (timeScale 60 instead of 15) so the test takes seconds.
 * Every wait is bounded; nothing asserts how fast anything was (that is bench/viz.ts).
 */

const SCENARIO = fileURLToPath(new URL('../../scenarios/agent8-storm/scenario.yaml', import.meta.url));
/**
 * The README links the screenshots in docs/images/, taken by this test: with `BREAKWATER_WRITE_DOCS=1` it writes
 * them there (to commit); otherwise to a temporary folder, so `npm test` leaves the checkout as it found it.
 */
const DOCS = process.env.BREAKWATER_WRITE_DOCS
  ? fileURLToPath(new URL('../../docs/images/', import.meta.url))
  : `${mkdtempSync(join(tmpdir(), 'bw-viz-docs-'))}/`;

let dir: string;
let browser: Browser | undefined;
let live: Page | undefined;
let runId = '';
let report: RunReport | undefined;
let log: EventRecord[] = [];

type VizHook = {
  breakwaterViz: {
    markerPoint(a: string, i: number): { x: number; y: number } | null;
    geometry(): {
      left: number;
      plot: number;
      laneTop: Record<string, number>;
      bar: number;
      window: { from: number; to: number };
    } | null;
    zoomTo(from: number, to: number): void;
  };
};

/**
 * A real press: down, held 120 ms, up (the click the issue saw dropped). Through Playwright's click, which presses
 * where the card is once its box stopped moving and the card is what the point hits: a box read first and pressed
 * later could meet the page's layout changed meanwhile (a loaded machine's Chromium lays out late) and press
 * another card or none.
 */
async function pressCard(page: Page, name: string): Promise<void> {
  const card = page.locator(`[data-testid="agent-${name}"]`);
  const box = await card.boundingBox();
  if (!box) throw new Error(`no card for ${name}`);
  await card.click({ delay: 120, position: { x: box.width / 2, y: 12 }, timeout: 10_000 });
}

async function scrubTo(page: Page, t: number): Promise<void> {
  await page.locator('[data-testid="scrubber"]').fill(String(t));
  await page.waitForSelector(`[data-testid="scrubber"][data-at="${t}"]`, { timeout: 20_000 });
}

describeBrowser('agent8-storm, live and replayed, in Chromium', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'breakwater-viz-storm-'));
    mkdirSync(DOCS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('live: a held click selects an agent mid-storm; the page says "run finished" with the result, then "server gone"', async () => {
    const yaml = (await readFile(SCENARIO, 'utf8')).replace(/^timeScale: 15$/m, 'timeScale: 60');
    expect(yaml).toContain('timeScale: 60');
    const scenario = join(dir, 'agent8-storm-fast.yaml');
    await writeFile(scenario, yaml);
    const lines: string[] = [];
    const run = runRunCommand({
      scenario,
      dataDir: join(dir, 'data'),
      live: false,
      stdin: false,
      vizPort: 0,
      print: (l) => lines.push(l),
    });
    run.catch(() => {});
    await waitFor(() => lines.some((l) => l.startsWith('visualizer: ')), 'the visualizer to listen', 60_000);
    const url = lines.find((l) => l.startsWith('visualizer: '))!.slice('visualizer: '.length);
    live = await browser!.newPage({ viewport: { width: 1500, height: 1300 } });
    const watched = watchPage(live);
    await live.goto(url);
    await live.waitForSelector('[data-testid="connection"][data-connected="true"]', { timeout: 30_000 });
    // Mid-storm: round 1 runs and agents are working.
    await live.waitForFunction(
      () => /^round [1-3] \//.test(document.querySelector('[data-testid="run-round"]')?.textContent ?? ''),
      undefined,
      { timeout: 60_000 },
    );
    for (const name of ['Kai', 'Yuna', 'Rex']) {
      await live.waitForSelector(`[data-testid="agent-${name}"]`, { timeout: 30_000 });
      await pressCard(live, name);
      await live.waitForSelector(`[data-testid="agent-${name}"].selected`, { timeout: 10_000 });
      await waitForText(live, 'agent-detail-name', name, 10_000);
    }
    await live.screenshot({ path: `${DOCS}viz-live-storm.png`, fullPage: true });

    report = await run;
    runId = report.runId;
    expect(await textOf(live, 'run-id')).toBe(`run ${runId}`);
    // The run's end, as the page tells it, then its server going away.
    await waitForText(live, 'run-status', 'run finished: completed', 30_000);
    const verdict = await textOf(live, 'run-verdict');
    const fails = report.checks.filter((c) => c.pass === false).length;
    expect(verdict).toBe(
      fails ? `FAIL (${fails} of ${report.checks.length} checks)` : `PASS (${report.checks.length} checks)`,
    );
    await live.waitForSelector('[data-testid="connection"][data-connected="gone"]', { timeout: 30_000 });
    expect(await textOf(live, 'connection')).toBe('server gone');
    // The stopping server resets, then refuses, the page's reconnect and its probe: the only errors.
    expect(watched.errors.filter((e) => !/net::ERR_CONNECTION_(?:REFUSED|RESET)/.test(e))).toEqual([]);
  }, 300_000);

  it('runs page → replay: lanes cover first→last event, a fault marker tells endpoint/kind/Retry-After, a fallback card names its fault', async () => {
    expect(runId).not.toBe('');
    const database = await openDatabase({ dataDir: join(dir, 'data') });
    try {
      log = await createRunStore(database).readEvents(runId);
    } finally {
      await database.close();
    }
    const stop = new AbortController();
    let origin = '';
    const serving = runVizCommand({
      dataDir: join(dir, 'data'),
      port: 0,
      signal: stop.signal,
      print: () => {},
      onListening: (u) => {
        origin = u;
      },
    });
    try {
      await waitFor(() => origin !== '', 'the runs page to listen', 30_000);
      const page = await browser!.newPage({ viewport: { width: 1500, height: 1300 } });
      const watched = watchPage(page);
      await page.goto(origin);
      await waitForText(page, 'mode', 'runs');
      const row = page.locator(`[data-testid="run-${runId}"]`);
      expect(await row.getAttribute('data-status')).toBe('completed');
      expect(await row.locator('[data-testid="run-result"]').textContent()).toMatch(/^completed/);
      await row.locator('[data-testid="run-open"]').click();
      await waitForText(page, 'mode', 'replay');
      await page.waitForSelector('[data-testid="scrubber"][data-at]', { timeout: 60_000 });
      await waitForText(page, 'run-status', 'run finished: completed');
      // The token limit comes from the run's stored settings (it was "?" in replay).
      expect(await textOf(page, 'tokens-limit')).toBe('3');
      // Times in the scenario's zone by default, with a note that the clock was simulated.
      expect(await page.locator('[data-testid="time-mode"]').inputValue()).toBe('zone');
      expect(await textOf(page, 'clock-note')).toContain('simulated clock: 60× real time');
      expect(await textOf(page, 'scrubber-time')).toMatch(/^2026-03-02 \d\d:\d\d:\d\d\.\d{3} Asia\/Seoul$/);
      await page.locator('[data-testid="time-mode"]').selectOption('relative');
      expect(await textOf(page, 'scrubber-time')).toMatch(/^\+\d\d:\d\d:\d\d\.\d{3} since start$/);
      await page.locator('[data-testid="time-mode"]').selectOption('zone');

      // At the end of the replay every lane covers its agent from its first to its last event: read the
      // canvas itself, column by column, on the lane's state bar.
      // The run's agents (a HALF-OPEN probe holds a token as `probe:<endpoint>`: not an agent, no lane).
      const started = log.find((e) => e.type === 'run.started')!.data as { agents: { name: string }[] };
      const agents = started.agents.map((a) => a.name);
      expect(agents.length).toBeGreaterThanOrEqual(8);
      const ranges = Object.fromEntries(
        agents.map((a) => {
          const own = log.filter((e) => e.agent === a).map((e) => Number(e.at));
          return [a, { first: Math.min(...own), last: Math.max(...own) }];
        }),
      );
      const gaps = await page.evaluate((want) => {
        const viz = (window as unknown as VizHook).breakwaterViz;
        const g = viz.geometry()!;
        const canvas = document.querySelector('[data-testid="timeline-canvas"]') as HTMLCanvasElement;
        const ctx = canvas.getContext('2d')!;
        const x = (t: number) => g.left + ((t - g.window.from) / (g.window.to - g.window.from)) * g.plot;
        const out: Record<string, number> = {};
        for (const [name, r] of Object.entries(want)) {
          const top = g.laneTop[name];
          if (top === undefined) {
            out[name] = -1;
            continue;
          }
          const x0 = Math.floor(x(r.first));
          const x1 = Math.max(x0 + 1, Math.floor(x(r.last)));
          const row = ctx.getImageData(x0, top + Math.floor(g.bar / 2), x1 - x0, 1).data;
          let blank = 0;
          for (let i = 0; i < row.length; i += 4) {
            // The lane's empty background is #10151b; any state colour differs from it.
            if (row[i] === 0x10 && row[i + 1] === 0x15 && row[i + 2] === 0x1b) blank++;
          }
          out[name] = blank;
        }
        return out;
      }, ranges);
      expect(gaps).toEqual(Object.fromEntries(agents.map((a) => [a, 0])));

      // A 429 with a Retry-After: the first fault of its agent at its instant, zoomed in so it stands alone.
      const faults = log.filter(
        (e) =>
          e.type === 'call.attempt' &&
          e.agent &&
          (e.data as { outcome?: string }).outcome === 'fault' &&
          (e.data as { retryAfterMs?: number }).retryAfterMs !== undefined,
      );
      expect(faults.length).toBeGreaterThan(0);
      const fault = faults.find((f) => {
        const same = log.filter(
          (e) =>
            e.type === 'call.attempt' &&
            e.agent === f.agent &&
            (e.data as { outcome?: string }).outcome === 'fault' &&
            Math.abs(Number(e.at) - Number(f.at)) < 50,
        );
        return same.length === 1;
      })!;
      const index = log
        .filter(
          (e) =>
            e.type === 'call.attempt' &&
            e.agent === fault.agent &&
            (e.data as { outcome?: string }).outcome === 'fault',
        )
        .indexOf(fault);
      const at = Number(fault.at);
      await page.evaluate(([from, to]) => (window as unknown as VizHook).breakwaterViz.zoomTo(from, to), [
        at - 2_000,
        at + 2_000,
      ] as const);
      // The lanes may be below the fold: a click outside the viewport reaches nothing.
      await page.locator('[data-testid="timeline-canvas"]').scrollIntoViewIfNeeded();
      const point = await page.evaluate(
        ([agent, i]) => (window as unknown as VizHook).breakwaterViz.markerPoint(agent, i),
        [fault.agent!, index] as const,
      );
      expect(point).not.toBeNull();
      await page.mouse.click(point!.x, point!.y);
      const data = fault.data as { faultKind: string; status?: number; retryAfterMs: number };
      await waitForText(page, 'inspect-endpoint', fault.endpoint!);
      expect(await textOf(page, 'inspect-fault')).toBe(data.faultKind);
      expect(await textOf(page, 'inspect-retry-after')).toBe(`${(data.retryAfterMs / 1000).toFixed(1)} s`);
      expect(await textOf(page, 'inspect-status')).toBe(
        data.status === undefined ? '—' : String(data.status),
      );
      // The page moved to that instant; the agent's detail is in step: its turns completed by then.
      expect(Number(await page.locator('[data-testid="scrubber"]').getAttribute('data-at'))).toBe(at);
      const turnsBy = log.filter(
        (e) => e.type === 'turn.completed' && e.agent === fault.agent && Number(e.at) <= at,
      ).length;
      await waitForText(page, 'agent-detail-name', fault.agent!);
      await waitForText(page, 'agent-turn-count', `${turnsBy} turn(s) at this instant`);
      await page.screenshot({ path: `${DOCS}viz-replay-fault.png`, fullPage: true });

      // A card in fallback names its fault: the agent's latest failed attempt before that instant.
      const entered = log.filter(
        (e) => e.type === 'agent.state' && (e.data as { state?: string }).state === 'fallback',
      );
      const lastFaultOf = (agent: string, t: number) =>
        log
          .filter(
            (e) =>
              e.type === 'call.attempt' &&
              e.agent === agent &&
              (e.data as { outcome?: string }).outcome === 'fault' &&
              Number(e.at) <= t,
          )
          .at(-1);
      // The state at t is the fold, in log order, of the events at or before t: the last move counts.
      const stateAt = (agent: string, t: number) =>
        (
          log.filter((x) => x.type === 'agent.state' && x.agent === agent && Number(x.at) <= t).at(-1)
            ?.data as { state?: string } | undefined
        )?.state;
      const fallback = entered.find(
        (e) => lastFaultOf(e.agent!, Number(e.at)) && stateAt(e.agent!, Number(e.at)) === 'fallback',
      );
      expect(fallback).toBeDefined();
      const t = Number(fallback!.at);
      await scrubTo(page, t);
      await waitForText(page, `agent-${fallback!.agent}-state`, 'fallback').catch(async (e: unknown) => {
        // Say what the page showed instead: the failure must be readable from the log alone.
        const shown = await textOf(page, `agent-${fallback!.agent}-state`);
        throw new Error(`${fallback!.agent} at ${t} (seq ${fallback!.seq}) shows ${shown}: ${String(e)}`);
      });
      const why = lastFaultOf(fallback!.agent!, t)!;
      const kind = (why.data as { faultKind: string }).faultKind;
      expect(await textOf(page, `agent-${fallback!.agent}-reason`)).toContain(`${kind} on ${why.endpoint}`);

      // "next fault" steps to the first failed attempt after the instant.
      const nextFault = log.find(
        (e) =>
          e.type === 'call.attempt' &&
          (e.data as { outcome?: string }).outcome === 'fault' &&
          Number(e.at) > t,
      );
      if (nextFault) {
        await page.click('[data-testid="next-fault"]');
        await page.waitForSelector(`[data-testid="scrubber"][data-at="${Number(nextFault.at)}"]`);
      }

      // The breaker's and the supervisor's statecharts, drawn from their machines, the current state lit.
      const chartMachine = page.locator('[data-testid="chart-machine"]');
      await chartMachine.selectOption('supervisor');
      await page.waitForSelector('[data-testid="chart-state-running"][data-active="true"]');
      expect(await page.locator('[data-testid="chart-state-stopped"]').getAttribute('data-active')).toBe(
        'false',
      );
      await chartMachine.selectOption('breaker');
      await page.waitForSelector('svg[data-machine="breaker"]');
      const lit = await page
        .locator('svg[data-machine="breaker"] [data-active="true"]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
      expect(lit).toHaveLength(1);
      expect(['chart-state-closed', 'chart-state-open', 'chart-state-halfOpen']).toContain(lit[0]);
      expect(await page.locator('svg[data-machine="breaker"] [data-testid^="chart-state-"]').count()).toBe(3);
      await scrubTo(page, Number(log.at(-1)!.at));
      await chartMachine.selectOption('supervisor');
      await page.waitForSelector('[data-testid="chart-state-stopped"][data-active="true"]');

      expect(watched.errors).toEqual([]);
      for (const u of watched.requests) expect(u.startsWith(origin)).toBe(true);
      await page.close();
    } finally {
      stop.abort();
      await serving;
    }
  }, 240_000);
});
