import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createLiveView } from '../../src/live/live-view.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createLiveEventLog, type LiveEventLog } from '../../src/store/event-log.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { createRunEventTail } from '../../src/runs/workers/run-event-tail.ts';
import { createWorkerEventRecorder } from '../../src/runs/workers/worker-event-recorder.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * The parent of `run --workers` follows the run's live stream in PostgreSQL as the workers append to it: every event
 * once, in seq order, each read fetching only what is new; the live view fed from it says which worker runs each
 * agent.
 */

let database: BreakwaterDatabase;
let store: RunStore;
let live: LiveEventLog;

beforeAll(async () => {
  database = await openDatabase({ url: postgresUrl() });
  store = createRunStore(database);
  live = createLiveEventLog(database);
});
afterAll(async () => {
  await database.close();
});

async function newRun(): Promise<string> {
  const runId = `tail-${randomUUID().slice(0, 8)}`;
  await store.createRun({
    runId,
    scenario: 'tail',
    config: {},
    totalRounds: 2,
    machineVersion: AGENT_MACHINE_VERSION,
  });
  return runId;
}

const turn = (agent: string, round: number, itemId: string, worker: string, at: number): RuntimeEvent => ({
  type: 'turn.completed',
  at,
  agent,
  data: {
    turnId: `${agent}-${round}-${itemId}`,
    tier: 'analysis',
    round,
    itemId,
    outcome: 'answered',
    degraded: false,
    waitMs: 0,
    attempts: 1,
    faults: [],
    startedAt: at,
    worker,
  },
});

describe('createRunEventTail', () => {
  it('delivers every event two workers append, once, in seq order; each read fetches only the new ones', async () => {
    const runId = await newRun();
    const pages: number[] = [];
    // The real store, counting the rows each read returned.
    const counted: Pick<LiveEventLog, 'readEvents'> = {
      readEvents: async (id, opts) => {
        const page = await live.readEvents(id, opts);
        pages.push(page.length);
        return page;
      },
    };
    const tail = createRunEventTail(counted, runId, { pollMs: 60_000, pageSize: 7 });
    const seen: RuntimeEvent[] = [];
    tail.subscribeEvents((e) => seen.push(e));
    const a = createWorkerEventRecorder(database, runId, 5);
    const b = createWorkerEventRecorder(database, runId, 3);
    try {
      let at = 0;
      for (let wave = 0; wave < 3; wave++) {
        for (let i = 0; i < 10; i++) {
          a.listener(turn('Kai', wave + 1, `I${i}`, 'host:1:aaaaaa', ++at));
          b.listener(turn('Yuna', wave + 1, `I${i}`, 'host:2:bbbbbb', ++at));
        }
        await Promise.all([a.flush(), b.flush()]);
        pages.length = 0;
        await tail.poll();
        // 20 new events in pages of at most 7: 7, 7, 6 — nothing read twice.
        expect(pages).toEqual([7, 7, 6]);
        expect(seen).toHaveLength(20 * (wave + 1));
      }
      const seqs = (await live.readEvents(runId)).map((r) => r.seq);
      expect(tail.lastSeq).toBe(Math.max(...seqs));
      // Each worker's own events keep their order; none lost, none twice.
      for (const agent of ['Kai', 'Yuna']) {
        const mine = seen.filter((e) => e.agent === agent).map((e) => (e.data as { itemId: string }).itemId);
        expect(mine).toEqual([0, 1, 2].flatMap(() => Array.from({ length: 10 }, (_, i) => `I${i}`)));
      }
      pages.length = 0;
      await tail.poll();
      expect(pages).toEqual([0]);
    } finally {
      tail.close();
    }
  });

  it('polls by itself (bounded) and feeds a live view whose agent lines and turn lines name the worker', async () => {
    const runId = await newRun();
    const tail = createRunEventTail(live, runId, { pollMs: 20 });
    const plain: string[] = [];
    const view = createLiveView({
      source: tail,
      agents: ['Kai', 'Yuna'],
      out: { write: (s: string) => plain.push(s), isTTY: false },
      isTTY: false,
    });
    const recorder = createWorkerEventRecorder(database, runId);
    try {
      recorder.listener({
        type: 'agent.state',
        at: 1,
        agent: 'Kai',
        data: { state: 'calling', previous: 'idle', worker: 'host:1:aaaaaa' },
      });
      recorder.listener(turn('Yuna', 1, 'I1', 'host:2:bbbbbb', 2));
      await recorder.flush();
      await waitFor(() => tail.lastSeq >= 2, 'the tail to read the two events', 10_000);
      const frame = view.frame();
      expect(frame.find((l) => l.includes('Kai'))).toContain('on host:1:aaaaaa');
      expect(frame.find((l) => l.includes('Yuna'))).toContain('on host:2:bbbbbb');
      expect(plain.join('')).toContain('Yuna answered (round 1 I1) on worker host:2:bbbbbb');
    } finally {
      view.stop();
      tail.close();
    }
  });
});
