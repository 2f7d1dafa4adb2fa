import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, finished, spawnCli } from './run-cli.ts';

/*
 * `breakwater run --viz` as a user runs it: the run goes, the visualizer answers on 127.0.0.1 with the live
 * state of the run's agents, and both end when the run ends.
 */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-run-viz-'));
  writeFileSync(
    join(dir, 'scenario.yaml'),
    `
name: viz-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-viz-drill-00000000000001 }
  chains: { main: [primary] }
agents:
  - { name: Kai, chain: main }
  - { name: Yuna, chain: main }
rounds:
  count: 2
  items:
${Array.from({ length: 6 }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 5
  latency: { minMs: 150, maxMs: 300 }
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('breakwater run --viz', () => {
  it('serves the live state of the running agents on 127.0.0.1, and the run completes', async () => {
    const child = spawnCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--viz',
        '--port',
        '0',
        '--no-live',
        '--no-stdin',
        '--data-dir',
        join(dir, 'data'),
      ],
      cleanEnv({ DATABASE_URL: '' }),
    );
    const run = finished(child);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no visualizer URL printed: ${out}`)), 60_000);
      child.stdout?.on('data', (d: Buffer | string) => {
        out += d.toString();
        const m = /visualizer: (http:\/\/127\.0\.0\.1:\d+\/?)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    const state = (await (await fetch(new URL('/api/live/state', url))).json()) as {
      agents: Record<string, { state: string }>;
    };
    expect(Object.keys(state.agents).sort()).toEqual(['Kai', 'Yuna']);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    const result = await run;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^result PASS/m);
  }, 180_000);
});
