import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, IN_MEMORY, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';

/*
 * Issue 42: turn keys were joined with `:` from run, round, item and agent, so item `I1` + agent `I1:Kai` and item
 * `I1:I1` + agent `Kai` shared `…:1:I1:I1:Kai:call0`; interrupted once both calls were memoized and resumed, one
 * turn was committed with the other's answer. Each turn must keep its own answer (the uninterrupted run's), and a
 * run stored with the old keys must still resume from its memo.
 */

let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 9, latency: { minMs: 20, maxMs: 60 } } });
  database = await openDatabase({ dataDir: IN_MEMORY });
  store = createRunStore(database);
});
afterAll(async () => {
  await database.close();
  await emulator.close();
});

function scenario(agents: readonly string[], items: readonly string[]): ScenarioSpec {
  return {
    name: 'turn-keys',
    runtime: {
      endpoints: [
        {
          id: 'primary',
          provider: 'openai',
          model: 'gpt-4o',
          emulator: 'openai',
          apiKey: 'sk-keys-000000000001',
        },
      ],
      chains: { main: ['primary'] },
      concurrency: { limit: 4 },
    },
    agents: agents.map((name) => ({ name, chain: 'main', role: `You are ${name}.` })),
    rounds: { count: 2, items: items.map((id) => ({ id, title: `Title of ${id}` })) },
  } as ScenarioSpec;
}

const common = () => ({ database, emulatorUrl: emulator.controlURL, virtualTime: true });

/** Runs until every turn in `watched` of round 1 has finished (its call memoized), then aborts: round 1 uncommitted. */
async function interrupted(spec: ScenarioSpec, runId: string, watched: readonly string[]): Promise<void> {
  const controller = new AbortController();
  const seen = new Set<string>();
  const onEvent = (e: RuntimeEvent) => {
    if (e.type !== 'turn.completed' || e.data.round !== 1) return;
    seen.add(`${e.data.itemId}|${e.agent}`);
    if (watched.every((w) => seen.has(w))) controller.abort(new Error('interrupted by the test'));
  };
  await expect(
    runScenario({ scenario: spec, runId, ...common(), signal: controller.signal, onEvent }),
  ).rejects.toThrow();
  expect((await store.getRun(runId))?.currentRound).toBe(0);
}

const answers = async (runId: string) =>
  new Map(
    (await store.listTurns(runId)).map((t) => [
      `${t.round}|${t.itemId}|${t.agent}`,
      (t.answer as { text?: string } | null)?.text,
    ]),
  );

/**
 * The sequence number of the latest request the emulator has begun: later requests have higher ones. Not the
 * last recorded call's: calls are recorded as they end, so the last one recorded can be older than one that ended
 * before it (a memoized call that started last and answered first then counted as asked after the mark).
 */
function latestSeq(): number {
  const s = emulator.stats();
  return s.totalCalls + s.inFlight;
}

/** Upstream calls answered (200) more than once for one idempotency key since `fromSeq`. */
function answeredTwice(fromSeq: number): string[] {
  const counts = new Map<string, number>();
  for (const c of emulator.stats().calls)
    if (c.seq > fromSeq && c.status === 200 && c.idempotencyKey)
      counts.set(c.idempotencyKey, (counts.get(c.idempotencyKey) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([k]) => k);
}

describe('turn keys across a resume', () => {
  it('item I1 + agent I1:Kai and item I1:I1 + agent Kai each keep their own answer after an interrupted round resumes', async () => {
    const spec = scenario(['Kai', 'I1:Kai'], ['I1', 'I1:I1']);
    const whole = await runScenario({ scenario: spec, runId: 'keys-whole', ...common() });
    expect(whole.run.status).toBe('completed');
    const expected = await answers('keys-whole');
    // Distinct turns get distinct answers: a turn given the other's answer is seen.
    expect(expected.get('1|I1|I1:Kai')).not.toBe(expected.get('1|I1:I1|Kai'));

    const fromSeq = latestSeq();
    await interrupted(spec, 'keys-cut', ['I1|I1:Kai', 'I1:I1|Kai']);
    const memo = await database.db
      .selectFrom('call_results')
      .select('idempotency_key')
      .where('run_id', '=', 'keys-cut')
      .execute();
    expect(memo.map((m) => m.idempotency_key)).toEqual(
      expect.arrayContaining(['keys-cut:1:I1:I1%3AKai:call0', 'keys-cut:1:I1%3AI1:Kai:call0']),
    );
    const resumeSeq = latestSeq();
    const resumed = await runScenario({ scenario: spec, runId: 'keys-cut', resume: true, ...common() });
    expect(resumed.run.status).toBe('completed');
    expect(await answers('keys-cut')).toEqual(expected);
    // Nothing memoized is asked again (a call cut by the interruption, never memoized, may be: its answer was lost).
    const memoized = new Set(memo.map((m) => m.idempotency_key));
    expect(
      emulator
        .stats()
        .calls.filter((c) => c.seq > resumeSeq && c.idempotencyKey && memoized.has(c.idempotencyKey)),
    ).toEqual([]);
    expect(answeredTwice(fromSeq).filter((k) => memoized.has(k))).toEqual([]);
    // The event log holds one turn.completed per committed turn, the interrupted round's first try none.
    const completed = (await store.readEvents('keys-cut')).filter((e) => e.type === 'turn.completed');
    expect(completed).toHaveLength(8);
    expect(
      new Set(
        completed.map((e) =>
          JSON.stringify([
            (e.data as { round: number }).round,
            (e.data as { itemId: string }).itemId,
            e.agent,
          ]),
        ),
      ).size,
    ).toBe(8);
  });

  it('a run stored with the old keys (no keyFormat) resumes from its memo under those keys', async () => {
    const spec = scenario(['Ops:Kai', 'Yuna'], ['I1', 'I2']);
    await interrupted(spec, 'keys-legacy', ['I1|Ops:Kai', 'I2|Ops:Kai']);
    // As an older breakwater stored it: no format in the config, keys joined as they are.
    const rows = await database.db
      .selectFrom('call_results')
      .select('idempotency_key')
      .where('run_id', '=', 'keys-legacy')
      .execute();
    for (const { idempotency_key: key } of rows)
      await database.db
        .updateTable('call_results')
        .set({ idempotency_key: key.replaceAll('%3A', ':') })
        .where('idempotency_key', '=', key)
        .execute();
    const run = await store.getRun('keys-legacy');
    const { keyFormat: _, ...legacy } = run!.config as Record<string, unknown>;
    await database.db
      .updateTable('runs')
      .set({ config: JSON.stringify(legacy) })
      .where('run_id', '=', 'keys-legacy')
      .execute();
    const legacyKeys = new Set(rows.map((r) => r.idempotency_key.replaceAll('%3A', ':')));
    expect(legacyKeys).toContain('keys-legacy:1:I1:Ops:Kai:call0');

    const fromSeq = latestSeq();
    const resumed = await runScenario({ scenario: spec, runId: 'keys-legacy', resume: true, ...common() });
    expect(resumed.run.status).toBe('completed');
    const asked = emulator
      .stats()
      .calls.filter((c) => c.seq > fromSeq)
      .map((c) => c.idempotencyKey);
    expect(asked.filter((k) => k !== undefined && legacyKeys.has(k))).toEqual([]);
    const turns = await store.listTurns('keys-legacy');
    expect(turns).toHaveLength(8);
    expect(
      turns.find((t) => t.round === 1 && t.itemId === 'I1' && t.agent === 'Ops:Kai')?.idempotencyKey,
    ).toBe('keys-legacy:1:I1:Ops:Kai');
  });
});
