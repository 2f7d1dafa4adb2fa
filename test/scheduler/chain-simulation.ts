/**
 * Agents working chains of asks against the real `MemoryTokenScheduler` on a manual clock: each agent starts at
 * its time, asks for a token with its asks left (`workLeft`), holds it for its call's duration, releases it and at
 * once asks for its next one, as an agent of the round runner does. Every endpoint is always ready (no pacing), so
 * the only thing deciding who goes is the tier policy. Records every request and grant for the properties to judge.
 */
import { sleep } from '../../src/clock/clock.ts';
import type { SchedulerReport } from '../../src/scheduler/token-scheduler.ts';
import { endpoint, fixture, request, success } from './scheduler-fixture.ts';

export const TIERS = ['incident', 'analysis', 'ops'] as const;

export interface SimAgent {
  readonly name: string;
  readonly tier: (typeof TIERS)[number];
  /** When it asks first, ms after the start. */
  readonly startMs: number;
  /** Its calls' durations, one per ask, in order. */
  readonly callsMs: readonly number[];
}

export interface SimRequest {
  readonly agent: string;
  readonly rank: number;
  readonly askedAt: number;
  /** Reports made before it asked: a grant reported at this index or later came after its ask. */
  readonly reportsBefore: number;
  grantedAt: number | undefined;
}

export interface SimResult {
  readonly requests: readonly SimRequest[];
  /** Every grant, in the order made, with its index among all the scheduler's reports. */
  readonly grants: readonly (Extract<SchedulerReport, { type: 'token.granted' }> & {
    readonly index: number;
  })[];
  /** After each instant the simulation settled at: tokens held and requests waiting. */
  readonly settled: readonly { readonly at: number; readonly held: number; readonly waiting: number }[];
  /** When the last call ended, ms after the start. */
  readonly makespanMs: number;
  readonly limit: number;
}

/** Lets every settled promise run its continuations (no simulated time passes). */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs `agents` on `limit` tokens under strict tiers (`slackMs` undefined) or the slack policy. */
export async function simulateChains(
  agents: readonly SimAgent[],
  limit: number,
  slackMs: number | undefined,
): Promise<SimResult> {
  const f = fixture({
    endpoints: [endpoint('model')],
    chains: { main: ['model'] },
    limit,
    tiers: TIERS,
    leaseMs: 24 * 3_600_000,
    ...(slackMs !== undefined ? { tierSlackMs: slackMs } : {}),
  });
  const start = f.clock.now();
  const requests: SimRequest[] = [];
  let lastEnd = start;
  const run = async (a: SimAgent) => {
    await sleep(f.clock, a.startMs);
    for (let i = 0; i < a.callsMs.length; i++) {
      const r: SimRequest = {
        agent: a.name,
        rank: TIERS.indexOf(a.tier),
        askedAt: f.clock.now(),
        reportsBefore: f.reports.length,
        grantedAt: undefined,
      };
      requests.push(r);
      const d = await f.scheduler.acquire(
        request(a.name, 'main', { tier: a.tier, workLeft: a.callsMs.length - i }),
      );
      if (d.kind !== 'granted') throw new Error(`${a.name}: expected a grant, got ${JSON.stringify(d)}`);
      r.grantedAt = f.clock.now();
      await sleep(f.clock, a.callsMs[i]!);
      f.scheduler.release(d.grant.leaseId, success('model'));
      lastEnd = Math.max(lastEnd, f.clock.now());
    }
  };
  const done = Promise.all(agents.map(run));
  let finished = false;
  void done.then(() => {
    finished = true;
  });
  const settled: SimResult['settled'][number][] = [];
  for (let steps = 0; steps < 1_000_000; steps++) {
    await drain();
    const v = f.scheduler.view();
    settled.push({ at: f.clock.now() - start, held: v.held, waiting: v.queue.length });
    if (finished || !f.clock.runNext()) break;
  }
  if (!finished)
    throw new Error(
      `the simulation stopped with requests unserved and no timer left: ${JSON.stringify(f.scheduler.view())}`,
    );
  await done;
  const grants = f.reports.flatMap((r, index) => (r.type === 'token.granted' ? [{ ...r, index }] : []));
  return { requests, grants, settled, makespanMs: lastEnd - start, limit };
}
