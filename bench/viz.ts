/**
 * bench:viz — the visualizer's page during a live agent8-storm, in Chromium.
 *
 * `breakwater run --viz` (the run command: emulator over real HTTP, PGlite in a temporary directory) replays
 * agent8-storm at its own timeScale (15) while headless Chromium (Debian's, `/usr/bin/chromium`, or env
 * `BREAKWATER_CHROMIUM`) shows the live page. While the run goes it presses an agent card every ~1.5 s the
 * way a person does (down, 120 ms, up; a different agent each time). It prints:
 * - main-thread long-task share: the sum of `longtask` entries ÷ the time observed (target < 10 %);
 * - click-to-update: from the press to the first frame showing the agent selected, p50 / p95 / max, and
 *   presses that never selected (target p95 ≤ 100 ms, none lost);
 * - the live feed's bytes per second as received on the wire (CDP `Network.dataReceived`, encoded, i.e.
 *   after gzip), and decoded (target ≤ 20 KB/s on the wire);
 * - the DOM's element count at the end of the run (target ≤ 3,000).
 * The machine's load is printed with them: the figures are noisy when other work shares the CPU.
 *
 * Run: `npm run bench:viz` (`--time-scale N` to replay faster or slower than the scenario's 15).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runRunCommand } from '../src/cli/commands/run-command.ts';

const CHROMIUM = process.env.BREAKWATER_CHROMIUM || '/usr/bin/chromium';
const SCENARIO = fileURLToPath(new URL('../scenarios/agent8-storm/scenario.yaml', import.meta.url));
const AGENTS = ['Kai', 'Yuna', 'Miso', 'Dani', 'Juno', 'Hana', 'Rex', 'Andrew'];

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function pct(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'breakwater-bench-viz-'));
  const scale = arg('--time-scale');
  let scenario = SCENARIO;
  if (scale) {
    scenario = join(dir, 'agent8-storm.yaml');
    await writeFile(
      scenario,
      (await readFile(SCENARIO, 'utf8')).replace(/^timeScale: 15$/m, `timeScale: ${scale}`),
    );
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
    ],
  });
  try {
    const lines: string[] = [];
    const run = runRunCommand({
      scenario,
      dataDir: join(dir, 'data'),
      live: false,
      stdin: false,
      vizPort: 0,
      print: (l) => lines.push(l),
    });
    let finished = false;
    const done = run.then(
      (r) => {
        finished = true;
        return r;
      },
      (e: unknown) => {
        finished = true;
        throw e;
      },
    );
    const deadline = Date.now() + 60_000;
    while (!lines.some((l) => l.startsWith('visualizer: '))) {
      if (Date.now() > deadline) throw new Error('the visualizer did not start within 60 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const url = lines.find((l) => l.startsWith('visualizer: '))!.slice('visualizer: '.length);
    const page = await browser.newPage({ viewport: { width: 1500, height: 1300 } });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    let liveRequest = '';
    let encoded = 0;
    let decoded = 0;
    cdp.on('Network.requestWillBeSent', (e: { requestId: string; request: { url: string } }) => {
      if (e.request.url.endsWith('/api/live')) liveRequest = e.requestId;
    });
    cdp.on(
      'Network.dataReceived',
      (e: { requestId: string; dataLength: number; encodedDataLength: number }) => {
        if (e.requestId !== liveRequest) return;
        encoded += e.encodedDataLength;
        decoded += e.dataLength;
      },
    );
    await page.goto(url);
    await page.waitForSelector('[data-testid="connection"][data-connected="true"]', { timeout: 60_000 });
    const t0 = Date.now();
    // A string, not a function: tsx names nested functions with a helper the page does not have.
    await page.evaluate(`(() => {
      const w = window;
      w.__longTasks = 0;
      w.__clicks = [];
      w.__start = performance.now();
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.__longTasks += e.duration;
      }).observe({ type: 'longtask' });
      document.addEventListener('pointerdown', (e) => {
        const card = e.target.closest('[data-agent]');
        if (!card) return;
        const start = e.timeStamp;
        const check = () => {
          if (card.classList.contains('selected')) requestAnimationFrame(() => w.__clicks.push(performance.now() - start));
          else if (performance.now() - start < 5000) requestAnimationFrame(check);
          else w.__clicks.push(-1);
        };
        requestAnimationFrame(check);
      }, true);
    })()`);
    let presses = 0;
    for (let i = 0; !finished; i++) {
      await new Promise((r) => setTimeout(r, 1_500));
      if (finished) break;
      const name = AGENTS[i % AGENTS.length]!;
      const box = await page.locator(`[data-testid="agent-${name}"]`).boundingBox();
      if (!box) continue;
      await page.mouse.move(box.x + box.width / 2, box.y + 12);
      await page.mouse.down();
      await new Promise((r) => setTimeout(r, 120));
      await page.mouse.up();
      presses++;
    }
    const report = await done;
    const wallS = (Date.now() - t0) / 1000;
    const seen = await page.evaluate(() => {
      const w = window as unknown as { __longTasks: number; __clicks: number[]; __start: number };
      return {
        longTasks: w.__longTasks,
        observed: performance.now() - w.__start,
        clicks: w.__clicks,
        dom: document.getElementsByTagName('*').length,
      };
    });
    const clicks = seen.clicks.filter((c) => c >= 0);
    const lost = presses - clicks.length;
    const share = (seen.longTasks / seen.observed) * 100;
    const p95 = pct(clicks, 95);
    const kbps = encoded / 1024 / wallS;
    const out = [
      `bench:viz — live agent8-storm (run ${report.runId}, timeScale ${scale ?? 15}), ${wallS.toFixed(1)} s observed`,
      `  load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (2 cores shared: noisy when others run)`,
      `  main-thread long tasks  ${share.toFixed(1)} % of ${(seen.observed / 1000).toFixed(1)} s   target < 10 %   ${share < 10 ? 'met' : 'MISSED'}`,
      `  click-to-update         p50 ${pct(clicks, 50).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, max ${Math.max(...clicks).toFixed(0)} ms over ${clicks.length} presses, ${lost} lost   target p95 ≤ 100 ms, none lost   ${p95 <= 100 && lost === 0 ? 'met' : 'MISSED'}`,
      `  live feed               ${kbps.toFixed(1)} KB/s on the wire (${(encoded / 1024).toFixed(0)} KB), ${(decoded / 1024 / wallS).toFixed(1)} KB/s decoded   target ≤ 20 KB/s   ${kbps <= 20 ? 'met' : 'MISSED'}`,
      `  DOM at the end          ${seen.dom} elements   target ≤ 3,000   ${seen.dom <= 3000 ? 'met' : 'MISSED'}`,
    ];
    for (const l of out) console.log(l);
    await page.close();
  } finally {
    await browser.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
