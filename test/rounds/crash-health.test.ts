import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import type { TurnRecord } from '../../src/store/store-types.ts';
import { perFileDatabase, postgresUrl } from '../support/per-file-database.ts';

/*
 * A resumed run is as healthy as an uninterrupted one. `breakwater run` (a child process) is SIGKILLed right after
 * round 1 committed and again right after round 2 committed (the first call of the next round is the sign), then
 * resumed to the end; the same scenario also runs once uninterrupted against its own emulator with the same seed
 * and faults. The emulators live in this process, so their record of every upstream call outlives the kills.
 * - the key without credit (disabled after its first call) is never called again after a resume;
 * - the endpoint whose breaker opened (3 × 429) stays OPEN until its time: not called, OPEN in every later
 *   round's committed health with the same deadline;
 * - the resumed run has no more degraded turns than the uninterrupted one.
 * On both backends. Kills are bounded (2 per backend), only of children this test started, by pid.
 */

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();
const AGENTS = ['Kai', 'Yuna', 'Miso'];
const ITEMS = 4;
const ROUNDS = 3;
const BROKE_KEY = 'sk-crash-health-broke-000001';
const FLAKY_KEY = 'sk-ant-crash-health-flaky-02';

const SCENARIO = `
name: crash-health
timeScale: 1
runtime:
  endpoints:
    - { id: broke, provider: openai, model: gpt-4o, emulator: openai, apiKey: ${BROKE_KEY} }
    - { id: flaky, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: ${FLAKY_KEY} }
    - { id: backup, provider: openai, model: gpt-4o-mini, emulator: openai, apiKey: sk-crash-health-backup-0003 }
  chains: { main: [broke, flaky, backup] }
  concurrency: { limit: 3 }
  breaker: { openMs: 600000 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis }`).join('\n')}
rounds:
  count: ${ROUNDS}
  items:
${Array.from({ length: ITEMS }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 12
`;

const PROFILE = {
  seed: 12,
  latency: { minMs: 5, maxMs: 20 },
  faults: [
    { kind: 'credit_exhausted', match: { key: BROKE_KEY } },
    { kind: 'rate_limit', match: { key: FLAKY_KEY }, count: 3, retryAfterMs: 1_000 },
  ],
} as const;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-crash-health-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['bin/breakwater.js', ...args], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, BREAKWATER_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the child to its end, or SIGKILLs it (by pid) once `killWhen` holds (polled every 20 ms, bounded). */
async function runOrKill(
  child: ChildProcess,
  killWhen?: () => boolean,
): Promise<{ killed: boolean; code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  child.stdout?.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const guard = setTimeout(() => child.kill('SIGKILL'), 120_000);
  let poll: NodeJS.Timeout | undefined;
  if (killWhen)
    poll = setInterval(() => {
      if (killWhen()) child.kill('SIGKILL');
    }, 20);
  const { code, signal } = await exited;
  clearTimeout(guard);
  if (poll) clearInterval(poll);
  return { killed: signal === 'SIGKILL', code, stderr };
}

const startedRound = (emulator: Emulator, runId: string, round: number) =>
  emulator.stats().calls.some((c) => c.idempotencyKey?.startsWith(`${runId}:${round}:`));

interface Outcome {
  readonly turns: TurnRecord[];
  readonly health: unknown[];
  readonly calls: ReturnType<Emulator['stats']>['calls'];
}

async function readRun(store: { url?: string; dataDir?: string }, runId: string) {
  const database = await openDatabase(store);
  try {
    const s = createRunStore(database);
    return {
      run: await s.getRun(runId),
      turns: await s.listTurns(runId),
      health: (await s.listRounds(runId)).map((r) => r.health),
    };
  } finally {
    await database.close();
  }
}

async function scenario(
  storeArgs: string[],
  store: { url?: string; dataDir?: string },
  runId: string,
  kills: number[],
): Promise<Outcome & { killed: number; callsAfterFirstKill: ReturnType<Emulator['stats']>['calls'] }> {
  const emulator = await startEmulator({ profile: structuredClone(PROFILE) as never });
  try {
    const common = ['--emulator-url', emulator.controlURL, ...storeArgs, '--json', '--no-live'];
    const env = storeArgs.includes('--database-url') ? { DATABASE_URL: postgresUrl() } : { DATABASE_URL: '' };
    let killed = 0;
    let seqAtFirstKill = Number.POSITIVE_INFINITY;
    let args = ['run', join(dir, 'scenario.yaml'), '--run-id', runId, ...common];
    for (let attempt = 0; attempt <= kills.length; attempt++) {
      const next = kills[attempt];
      const outcome = await runOrKill(
        cli(args, env),
        next === undefined ? undefined : () => startedRound(emulator, runId, next + 1),
      );
      if (outcome.killed) {
        killed++;
        if (killed === 1) seqAtFirstKill = emulator.stats().totalCalls;
      } else {
        expect(outcome.stderr).toBe('');
        expect(outcome.code).toBe(0);
      }
      args = ['resume', runId, ...common];
    }
    const { run, turns, health } = await readRun(store, runId);
    expect(run?.status).toBe('completed');
    const calls = emulator.stats().calls;
    return { turns, health, calls, killed, callsAfterFirstKill: calls.filter((c) => c.seq > seqAtFirstKill) };
  } finally {
    await emulator.close();
  }
}

const BACKENDS = [
  { name: 'postgres', args: () => ['--database-url', postgresUrl()], store: () => ({ url: postgresUrl() }) },
  {
    name: 'pglite',
    args: (tag: string) => ['--data-dir', join(dir, tag)],
    store: (tag: string) => ({ dataDir: join(dir, tag) }),
  },
];

// The backends, and the plain and crashed runs of each, are independent (own emulator, run id, data folder; kills
// triggered by what the emulator sees, not by time): they run side by side.
describe.concurrent.each(BACKENDS)(
  'a resumed run is as healthy as an uninterrupted one, on $name',
  (backend) => {
    it('killed after round 1 and after round 2: the key without credit is not called again, the OPEN breaker stays OPEN until its time, and no more turns degrade', async () => {
      const stamp = Date.now();
      const [plain, crashed] = await Promise.all([
        scenario(backend.args('plain'), backend.store('plain'), `health-plain-${backend.name}-${stamp}`, []),
        scenario(
          backend.args('crashed'),
          backend.store('crashed'),
          `health-crashed-${backend.name}-${stamp}`,
          [1, 2],
        ),
      ]);
      expect(crashed.killed).toBe(2);

      for (const o of [plain, crashed]) {
        expect(o.turns).toHaveLength(ROUNDS * ITEMS * AGENTS.length);
        expect(new Set(o.turns.map((t) => `${t.round}:${t.itemId}:${t.agent}`)).size).toBe(o.turns.length);
      }
      const broke = (calls: Outcome['calls']) => calls.filter((c) => c.fault === 'credit_exhausted');
      const flaky = (calls: Outcome['calls']) => calls.filter((c) => c.flavor === 'anthropic');
      // Uninterrupted: the broke key answered "no credit" (once per call already in flight) and was disabled;
      // flaky answered 429 three times and opened. Resumed twice: the same, and nothing of either after the first kill.
      expect(broke(plain.calls).length).toBeGreaterThanOrEqual(1);
      expect(broke(crashed.calls).length).toBeGreaterThanOrEqual(1);
      expect(flaky(plain.calls).filter((c) => c.status === 429)).toHaveLength(3);
      expect(flaky(crashed.calls).filter((c) => c.status === 429)).toHaveLength(3);
      expect(crashed.callsAfterFirstKill.length).toBeGreaterThan(0);
      expect(broke(crashed.callsAfterFirstKill)).toEqual([]);
      expect(flaky(crashed.callsAfterFirstKill)).toEqual([]);
      // Every committed round after the first shows the breaker OPEN with the deadline it opened with.
      const flakyHealth = crashed.health.map(
        (h) =>
          (
            h as Record<
              string,
              { breaker: { value: string; context: { openUntil: number } }; disabledUntil: number }
            >
          ).flaky,
      );
      const brokeHealth = crashed.health.map(
        (h) => (h as Record<string, { disabledUntil: number; disabledReason?: string }>).broke,
      );
      expect(flakyHealth.map((f) => f?.breaker.value)).toEqual(['open', 'open', 'open']);
      expect(new Set(flakyHealth.map((f) => f?.breaker.context.openUntil)).size).toBe(1);
      expect(brokeHealth.map((b) => b?.disabledReason)).toEqual([
        'credit exhausted',
        'credit exhausted',
        'credit exhausted',
      ]);
      expect(new Set(brokeHealth.map((b) => b?.disabledUntil)).size).toBe(1);

      const degraded = (turns: TurnRecord[]) => turns.filter((t) => t.degraded).length;
      expect(degraded(crashed.turns)).toBeLessThanOrEqual(degraded(plain.turns));
    }, 400_000);
  },
);
