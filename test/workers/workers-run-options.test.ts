import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: the parser ships no types; its output shape is checked below.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRunCommand } from '../../src/cli/commands/run-command.ts';
import type { RunReport } from '../../src/report/report-types.ts';
import type { VizState } from '../../src/viz/viz-state-types.ts';
import { cleanEnv, finished, spawnCli } from '../cli/run-cli.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 24 PostgreSQL connections at once: the CLI's workers and their parent (measured peak, with room).
perFileDatabase({ connections: 24 });

/*
 * `run --workers N` with `--stream`, `--viz` and `--metrics-port`: real worker processes on one PostgreSQL store;
 * the parent relays every worker's streamed texts, and its visualizer and /metrics show the whole run (every
 * worker's events from the run's log), not one process's part.
 */

const AGENTS = ['Kai', 'Yuna', 'Miso', 'Ari'];
/** 4 rounds of 3 items: each part of a round is ≥ 3 calls of ≥ 600 ms, so rounds 3–4 leave seconds to look. */
const scenario = (name: string) => `
name: ${name}
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-workers-options-00000000001 }
  chains: { main: [primary] }
  concurrency: { limit: 4 }
  agentDefaults: { maxWaitMs: 120000 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}." }`).join('\n')}
rounds:
  count: 4
  items:
    - { id: I1, title: Item 1 }
    - { id: I2, title: Item 2 }
    - { id: I3, title: Item 3 }
emulator:
  seed: 21
  latency: { minMs: 600, maxMs: 900 }
`;
const TURNS = 4 * 3 * AGENTS.length;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-workers-options-'));
  writeFileSync(join(dir, 'scenario.yaml'), scenario('workers-options'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Resolves with the first match of `pattern` in the child's stdout (rejects if it exits first). */
function stdoutMatch(child: ChildProcess, pattern: RegExp, giveUpMs = 120_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} in ${giveUpMs} ms:\n${seen}`)), giveUpMs);
    const onData = (d: Buffer | string) => {
      seen += d.toString();
      const m = pattern.exec(seen);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(m);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the CLI exited (${code}) before ${pattern}:\n${seen}`));
    });
  });
}

function reportOf(stdout: string): RunReport {
  return JSON.parse(stdout.trim().split('\n').pop()!) as RunReport;
}

describe('run --workers with --stream, --viz and --metrics-port', () => {
  it('--stream: every agent’s text reaches the parent as it grows, from both workers; the run completes', async () => {
    const texts = new Map<string, string[]>();
    const lines: string[] = [];
    const report = await runRunCommand({
      scenario: join(dir, 'scenario.yaml'),
      workers: 2,
      databaseUrl: postgresUrl(),
      runId: `workers-stream-${process.pid}`,
      stream: true,
      live: false,
      stdin: false,
      onText: (agent, text) => texts.set(agent, [...(texts.get(agent) ?? []), text]),
      print: (line) => lines.push(line),
    });
    expect(report.status).toBe('completed');
    expect(report.turns.total).toBe(TURNS);
    expect(Object.keys(report.byWorker ?? {})).toHaveLength(2);
    expect([...texts.keys()].sort()).toEqual([...AGENTS].sort());
    for (const agent of AGENTS) {
      const seen = texts.get(agent)!;
      // Cleared at the end of its turns (a turn re-asked after a lease takeover reads its call back from the memo,
      // without deltas: so at most, not exactly, one per turn), and seen growing within a turn.
      const ends = seen.filter((t, i) => t === '' && i > 0 && seen[i - 1] !== '').length;
      expect(ends).toBeGreaterThan(0);
      expect(ends).toBeLessThanOrEqual(4 * 3);
      expect(seen.at(-1)).toBe('');
      expect(
        seen.some(
          (t, i) =>
            i > 0 && seen[i - 1] !== '' && t.startsWith(seen[i - 1]!) && t.length > seen[i - 1]!.length,
        ),
      ).toBe(true);
    }
  }, 240_000);

  it('--viz: the visualizer shows every agent of the whole run (both workers’ turns), then the report', async () => {
    const child = spawnCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '2',
        '--database-url',
        postgresUrl(),
        '--run-id',
        `workers-viz-${process.pid}`,
        '--viz',
        '--port',
        '0',
        '--no-stdin',
      ],
      cleanEnv(),
    );
    const run = finished(child);
    try {
      const [, url] = await stdoutMatch(child, /visualizer: (http:\/\/127\.0\.0\.1:\d+)/);
      await stdoutMatch(child, /round 2 committed/);
      const state = (await (await fetch(new URL('/api/live/state', url))).json()) as VizState;
      expect(Object.keys(state.agents).sort()).toEqual([...AGENTS].sort());
      expect(state.run.committedRound).toBeGreaterThanOrEqual(2);
      // Every agent's turns of the committed rounds, whichever worker asked them.
      for (const agent of AGENTS) expect(state.agents[agent]!.turns).toBeGreaterThanOrEqual(2 * 3);
      expect(state.tokens.limit).toBe(4);
      expect(Object.keys(state.endpoints)).toEqual(['primary']);
      expect(state.endpoints.primary!.calls).toBeGreaterThanOrEqual(2 * 3 * AGENTS.length);
      const detail = (await (await fetch(new URL('/api/live/agents/Kai', url))).json()) as {
        turns: unknown[];
      };
      expect(detail.turns.length).toBeGreaterThanOrEqual(2 * 3);
    } finally {
      const result = await run;
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^result PASS/m);
    }
  }, 240_000);

  it('--metrics-port: /metrics counts the whole run’s turns and calls (both workers), read from the run’s log', async () => {
    const child = spawnCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '2',
        '--database-url',
        postgresUrl(),
        '--run-id',
        `workers-metrics-${process.pid}`,
        '--metrics-port',
        '0',
        '--no-stdin',
      ],
      cleanEnv(),
    );
    const run = finished(child);
    let committed = 0;
    try {
      const [, url] = await stdoutMatch(child, /metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/);
      await stdoutMatch(child, /round 2 committed/);
      const text = await (await fetch(url!)).text();
      const families = parsePrometheusTextFormat(text) as {
        name: string;
        metrics: { value?: string; labels?: Record<string, string> }[];
      }[];
      const sum = (name: string) =>
        (families.find((f) => f.name === name)?.metrics ?? []).reduce((a, m) => a + Number(m.value ?? 0), 0);
      committed = 2 * 3 * AGENTS.length;
      expect(sum('breakwater_turns_total')).toBeGreaterThanOrEqual(committed);
      // Calls of both workers too (a call's event may follow its turn's into the log, so not one per turn yet).
      expect(sum('breakwater_upstream_calls_total')).toBeGreaterThan(2 * 3);
      expect(sum('breakwater_tokens_limit')).toBe(4);
      const outcomes = families
        .find((f) => f.name === 'breakwater_turns_total')!
        .metrics.map((m) => m.labels);
      expect(outcomes).toContainEqual({ tier: 'analysis', outcome: 'answered' });
    } finally {
      const result = await run;
      expect(result.code).toBe(0);
    }
    expect(committed).toBeGreaterThan(0);
  }, 240_000);

  it('--stream on the CLI: the run completes with the same turns as a plain one, its report on stdout', async () => {
    const child = spawnCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '2',
        '--database-url',
        postgresUrl(),
        '--stream',
        '--json',
        '--no-stdin',
      ],
      cleanEnv(),
    );
    const result = await finished(child);
    expect(result.stderr).not.toMatch(/error|Error|MaxListeners/);
    expect(result.code).toBe(0);
    const report = reportOf(result.stdout);
    expect(report.status).toBe('completed');
    expect(report.turns.total).toBe(TURNS);
  }, 240_000);
});
