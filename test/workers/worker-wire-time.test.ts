import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { runWorker } from '../../src/runs/workers/run-worker.ts';
import { startWorkerRun } from '../../src/runs/workers/start-worker-run.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';
import {
  okReply,
  RESET_HEADER_FORMS,
  type ResetHeaderForm,
  rateLimitReply,
} from '../support/reset-header-forms.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';
import { LIMITED_THEN_BACKUP } from '../support/limited-backup-scenario.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * A worker reads a wall-time endpoint's waits as the in-process run does: a real server's 7 s retry-after on a run
 * at timeScale 15 is 105 s of the run's clock (read as 7 s there, the endpoint is called again 15 times too early).
 */

const WAIT_MS = 7_000;
const KEY = 'sk-worker-walltime-000000000001';

let database: BreakwaterDatabase;
let server: WireFixtureServer;
let dir: string;

beforeAll(async () => {
  database = await openDatabase({ url: postgresUrl() });
  server = await startWireFixtureServer({ ok: okReply('openai') });
  dir = mkdtempSync(join(tmpdir(), 'bw-worker-walltime-'));
});
afterAll(async () => {
  await server.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a worker on a time-scaled run', () => {
  it("scales a real endpoint's 7 s retry-after onto the run's clock: 105 s at timeScale 15", async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'retry-after-ms') as ResetHeaderForm;
    server.route('limited', () => rateLimitReply(form, Date.now(), WAIT_MS));
    const endpoint = (id: string, route: string) =>
      `    - { id: ${id}, provider: openai, model: gpt-4o, apiKey: ${KEY}, baseURL: "${server.url(route)}" }`;
    const source = join(dir, 'scenario.yaml');
    writeFileSync(
      source,
      `
name: worker-walltime
timeScale: 15
runtime:
  endpoints:
${endpoint('limited', 'limited')}
${endpoint('backup', 'ok')}
${LIMITED_THEN_BACKUP}`,
    );
    const { runId } = await startWorkerRun({
      scenario: loadScenario(source),
      scenarioSource: source,
      database,
      workers: 1,
    });
    const summary = await runWorker({ database, databaseUrl: postgresUrl(), runId, holder: 'w-a:0:0' });
    expect(summary.turns).toBe(1);
    const store = createRunStore(database);
    expect((await store.getRun(runId))?.status).toBe('completed');
    const events = (await store.readEvents(runId)) as unknown as RuntimeEvent[];
    const fault = events.find(
      (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> =>
        e.type === 'call.attempt' && e.data.outcome === 'fault',
    );
    expect(fault?.endpoint).toBe('limited');
    expect(fault?.data.faultKind).toBe('rate_limited');
    expect(fault?.data.retryAfterMs).toBe(WAIT_MS * 15);
    // The endpoints' health committed with the round.
    const health = (await store.lastHealth(runId)) as Record<string, { cooldownUntil: number }> | null;
    const limited = health?.limited;
    const cooldownMs = (limited?.cooldownUntil ?? 0) - (fault?.at ?? 0);
    // ± 1 real s (15 s of the run's clock) for the time the answer spent in transit.
    expect(cooldownMs).toBeGreaterThanOrEqual(WAIT_MS * 15 - 15_000);
    expect(cooldownMs).toBeLessThanOrEqual(WAIT_MS * 15 + 15_000);
  }, 60_000);

  it('stores whether the emulator is on the run clock: one it starts is, one given by URL is not (its waits are scaled)', async () => {
    const source = join(dir, 'emulated.yaml');
    writeFileSync(
      source,
      `
name: worker-emulated
timeScale: 15
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: emu-a }
  chains: { main: [primary] }
agents:
  - { name: Kai, chain: main, role: "You are Kai." }
rounds:
  count: 1
  items: [{ id: I1, title: Item 1 }]
emulator:
  acceptAnyKey: true
`,
    );
    const store = createRunStore(database);
    const stored = async (runId: string) =>
      ((await store.getRun(runId))?.config as { workers?: { emulatorOnRunClock?: boolean } } | undefined)
        ?.workers;
    const own = await startWorkerRun({
      scenario: loadScenario(source),
      scenarioSource: source,
      database,
      workers: 1,
    });
    try {
      expect(own.emulator).toBeDefined();
      expect((await stored(own.runId))?.emulatorOnRunClock).toBe(true);
      const given = await startWorkerRun({
        scenario: loadScenario(source),
        scenarioSource: source,
        database,
        workers: 1,
        emulatorUrl: own.emulator!.controlURL,
      });
      expect(given.emulator).toBeUndefined();
      expect((await stored(given.runId))?.emulatorOnRunClock).toBe(false);
      for (const id of [own.runId, given.runId]) await store.setRunStatus(id, 'failed');
    } finally {
      await own.emulator?.close();
    }
  });
});
