import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { durableAgentState } from '../../src/runtime/agent-snapshot.ts';
import type { Turn } from '../../src/core/turn.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
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

const RUN_ID = 'viz-replay-1';

let emulator: Emulator;
let clock: ManualClock;
let database: BreakwaterDatabase;
let store: RunStore;
let browser: Browser | undefined;
let viz: VizServer | undefined;
/** The run's event log, as stored. */
let log: RuntimeEvent[];
let analystTurn: Turn;

/** What the raw log says at instant t, read without the reducer: the last word of each event kind. */
function fromLog(t: number) {
  const upTo = log.filter((e) => e.at <= t);
  const last = (pred: (e: RuntimeEvent) => boolean, field: string, fallback: string) => {
    const e = upTo.filter(pred).at(-1);
    return e ? String((e.data as Record<string, unknown>)[field]) : fallback;
  };
  const leases = new Set<string>();
  for (const e of upTo) {
    const lease = (e.data as { leaseId?: string }).leaseId;
    if (e.type === 'token.granted' || e.type === 'probe.started') leases.add(lease!);
    if (e.type === 'token.released' || e.type === 'token.reclaimed') leases.delete(lease!);
  }
  const label = (s: string) => (s === 'halfOpen' ? 'HALF-OPEN' : s.toUpperCase());
  return {
    analyst: last((e) => e.type === 'agent.state' && e.agent === 'analyst', 'state', 'idle'),
    ops: last((e) => e.type === 'agent.state' && e.agent === 'ops', 'state', 'idle'),
    sonnet: label(last((e) => e.type === 'breaker.state' && e.endpoint === 'sonnet', 'state', 'closed')),
    flash: label(last((e) => e.type === 'breaker.state' && e.endpoint === 'flash', 'state', 'closed')),
    held: String(leases.size),
  };
}

async function readDom(page: Page) {
  return {
    analyst: await textOf(page, 'agent-analyst-state'),
    ops: await textOf(page, 'agent-ops-state'),
    sonnet: await textOf(page, 'endpoint-sonnet-breaker'),
    flash: await textOf(page, 'endpoint-flash-breaker'),
    held: await textOf(page, 'tokens-held'),
  };
}

async function scrubTo(page: Page, t: number): Promise<void> {
  await page.locator('[data-testid="scrubber"]').fill(String(t));
  await page.waitForSelector(`[data-testid="scrubber"][data-at="${t}"]`);
}

describeBrowser('replay page in Chromium (event log in PGlite)', () => {
  beforeAll(async () => {
    clock = createManualClock(Date.parse('2026-08-17T07:32:00+09:00'));
    // Calls take simulated time (as real ones take real time), so a probe in flight leaves the breaker HALF-OPEN
    // for a span of the timeline: with none, HALF-OPEN and the probe's answer would share one instant.
    emulator = await startEmulator({ profile: { seed: 31, latency: { minMs: 400, maxMs: 400 } }, clock });
    // A real run: the storm and the recovery, against the emulator.
    const scenario = breakerScenario(emulator, clock);
    await scenario.storm();
    const turns = await scenario.recover();
    analystTurn = turns.analyst;
    const analystHandle = scenario.supervisor.agent('analyst')!;
    const snapshot = analystHandle.persistedSnapshot();
    await scenario.supervisor.stop();
    const first = scenario.events[0]!.at;
    const last = scenario.events.at(-1)!.at;
    // What the round runner writes around the runtime's own events.
    log = [
      {
        type: 'run.started',
        at: first,
        data: {
          runId: RUN_ID,
          scenario: 'breaker-storm',
          rounds: 1,
          agents: [
            { name: 'analyst', tier: 'analysis', chain: 'premium' },
            { name: 'ops', tier: 'ops', chain: 'light' },
          ],
          endpoints: ['sonnet', 'flash'],
        },
      },
      { type: 'round.started', at: first, data: { round: 1 } },
      ...scenario.events,
      { type: 'round.committed', at: last, data: { round: 1, turns: 2 } },
      { type: 'run.finished', at: last, data: { runId: RUN_ID, status: 'completed' } },
    ];

    database = await openDatabase({ dataDir: ':memory:' });
    store = createRunStore(database, { clock });
    await store.createRun({
      runId: RUN_ID,
      scenario: 'breaker-storm',
      totalRounds: 1,
      machineVersion: AGENT_MACHINE_VERSION,
      config: { concurrency: { limit: 2 }, endpoints: [{ id: 'sonnet', apiKey: SONNET_KEY }] },
    });
    await store.appendEvents(
      RUN_ID,
      log.map((e, i) => ({
        seq: i + 1,
        at: e.at,
        type: e.type,
        agent: e.agent ?? null,
        endpoint: e.endpoint ?? null,
        data: e.data,
      })),
    );
    await store.commitRound({
      runId: RUN_ID,
      round: 1,
      turns: [turns.analyst, turns.ops].map((t) => ({
        itemId: 'agenda-1',
        agent: t.agent,
        prompt: t.prompt,
        answer: { text: t.answer.text },
        outcome: t.outcome as 'answered',
        endpointId: t.endpointId ?? null,
        degraded: t.degraded,
        faults: t.faults,
        waitMs: t.waitMs,
      })),
      states: [{ agent: 'analyst', ...durableAgentState(snapshot) }],
    });
    await store.setRunStatus(RUN_ID, 'completed');
    browser = await launchChromium();
    viz = await startVizServer({ store, port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await viz?.close();
    await database?.close();
    await emulator?.close();
  });

  it('lists the runs, opens one, and shows at each chosen instant the states its event log says', async () => {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1100 } });
    const watched = watchPage(page);
    await page.goto(viz!.url);
    await waitForText(page, 'mode', 'runs');
    await page.click(`[data-testid="run-${RUN_ID}"] a`);
    await waitForText(page, 'mode', 'replay');
    await page.waitForSelector('[data-testid="scrubber"][data-at]');

    const scrubber = page.locator('[data-testid="scrubber"]');
    const times = [...new Set(log.map((e) => e.at))].sort((a, b) => a - b);
    expect(Number(await scrubber.getAttribute('min'))).toBe(times[0]);
    expect(Number(await scrubber.getAttribute('max'))).toBe(times.at(-1));
    // Opens at the end of the run.
    expect(await readDom(page)).toEqual(fromLog(times.at(-1)!));

    // The instants where the breaker sits in each of its states, as the log says.
    const halfOpenAt = log.find(
      (e) => e.type === 'breaker.state' && (e.data as { state: string }).state === 'halfOpen',
    )!.at;
    const chosen = [times[0]!, halfOpenAt - 1, halfOpenAt, ...times.slice(-3), times[0]!];
    const seen = new Set<string>();
    for (const t of chosen) {
      await scrubTo(page, t);
      const dom = await readDom(page);
      expect({ t, ...dom }).toEqual({ t, ...fromLog(t) });
      seen.add(`${dom.analyst}/${dom.sonnet}`);
    }
    // Both moments the brief cares about were really shown: cooling behind OPEN, idle behind CLOSED.
    expect(seen).toContain('cooling/OPEN');
    expect(seen).toContain('idle/CLOSED');
    expect([...seen].some((s) => s.endsWith('/HALF-OPEN'))).toBe(true);

    // At the storm's instant: the 429 is on analyst's lane, the countdowns read from the log.
    await scrubTo(page, times[0]!);
    const point = await page.evaluate(() =>
      (
        window as unknown as {
          breakwaterViz: { markerPoint(a: string, i: number): { x: number; y: number } | null };
        }
      ).breakwaterViz.markerPoint('analyst', 0),
    );
    expect(point).not.toBeNull();
    expect(await textOf(page, 'endpoint-sonnet-cooldown')).toBe('30.0 s');
    expect(await textOf(page, 'tokens-limit')).toBe('2');
    expect(await textOf(page, 'scrubber-time')).toBe(
      `${new Date(times[0]!).toISOString().replace('T', ' ').slice(0, 23)}Z`,
    );

    // Clicking the marker shows the fault (and moves the page to its instant, the storm's).
    await page.mouse.click(point!.x, point!.y);
    await waitForText(page, 'inspect-status', '429');
    expect(await textOf(page, 'inspect-endpoint')).toBe('sonnet');
    expect(await textOf(page, 'inspect-retry-after')).toBe('30.0 s');
    expect(await textOf(page, 'agent-analyst-reason')).toContain('429 rate_limited on sonnet');

    // The detail is in step with the scrubber: at the storm's instant analyst has no turn yet.
    await page.click('[data-testid="agent-analyst"]');
    await page.waitForSelector('[data-testid="chart-state-cooling"][data-active="true"]');
    await waitForText(page, 'agent-turn-count', '0 turn(s) at this instant');
    await page.screenshot({ path: screenshotPath('viz-replay.png'), fullPage: true });

    // At the run's end: its committed turn and its last snapshot.
    await scrubTo(page, times.at(-1)!);
    await page.waitForSelector('[data-testid="turn-row"]');
    const row = page.locator('[data-testid="turn-row"]').first();
    expect(await row.locator('[data-testid="turn-prompt"]').textContent()).toBe(
      'What moved rates overnight?',
    );
    expect(await row.locator('[data-testid="turn-endpoint"]').textContent()).toBe('sonnet');
    expect(await row.locator('[data-testid="turn-answer"]').textContent()).toBe(
      analystTurn.answer.text.slice(0, 600),
    );
    expect(await row.getAttribute('data-degraded')).toBe('false');
    expect(await textOf(page, 'agent-snapshot')).toContain('"value": "idle"');
    await page.waitForSelector('[data-testid="chart-state-idle"][data-active="true"]');

    expect(await page.content()).not.toContain(SONNET_KEY);
    expect(watched.errors).toEqual([]);
    for (const url of watched.requests) expect(url.startsWith(`${viz!.url}/`)).toBe(true);
    await page.close();
  });
});
