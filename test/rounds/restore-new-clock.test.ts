import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FaultKind } from '../../src/core/fault.ts';
import { rebaseHealth } from '../../src/runs/run-restore.ts';
import { endpoint, type Fixture, fault, fixture, success, T0 } from '../scheduler/scheduler-fixture.ts';

/*
 * A resumed run's endpoint health (breaker, cooldown, disable, paced units) on the resumed run's clock: the real
 * endpoint registry and its restore, on manual clocks. The resumed clock starts at the run's last recorded event,
 * which may be before the stored export (the events after the last commit were lost with the process): a restored
 * wait must never be longer than what was left of it in the run that stored it.
 */

/** A bucket's export stamps each unit with its slot's END (1/60 of the minute): one slot later at most. */
const SLOT_MS = 1_000;
const KINDS: readonly (FaultKind | 'ok')[] = [
  'ok',
  'ok',
  'ok',
  'rate_limited',
  'network',
  'credit_exhausted',
];

function make(): Fixture {
  return fixture({ endpoints: [endpoint('backup', { rpm: 4, tpm: 2_000 })], chains: { c: ['backup'] } });
}

/** How long a call on `backup` waits from the fixture's now: 0 when it may go at once. */
function waitOf(f: Fixture): number {
  const now = f.clock.now();
  const r = f.endpoints.get('backup')!.health.readiness(now, 100);
  return r ? Math.max(0, r.until - now) : 0;
}

/** Calls on `backup` at the given gaps, each settled with its outcome (skipped while the endpoint must wait). */
function drive(f: Fixture, steps: readonly { gapMs: number; kind: FaultKind | 'ok' }[]): void {
  const health = f.endpoints.get('backup')!.health;
  for (const s of steps) {
    f.clock.advance(s.gapMs);
    const now = f.clock.now();
    if (health.readiness(now, 100)) continue;
    health.take(100, now);
    health.settle(s.kind === 'ok' ? success('backup') : fault(s.kind), 100, now);
  }
}

/** The original run exported at its now, and a runtime restored from that export on a clock at now + gapMs. */
function restoredAt(
  steps: Parameters<typeof drive>[1],
  gapMs: number,
  legacy = false,
): { original: Fixture; restored: Fixture } {
  const original = make();
  // Far enough from T0 that the restored clock (which can only move forward from T0) can sit before the export.
  original.clock.advance(300_000);
  drive(original, steps);
  const exportedAt = original.clock.now();
  const stored = JSON.parse(JSON.stringify(original.endpoints.exportHealth(exportedAt)));
  // A document stored by an older release carries no export time.
  if (legacy) for (const h of Object.values(stored)) delete (h as { exportedAt?: number }).exportedAt;
  const restored = make();
  restored.clock.advance(exportedAt + gapMs - T0);
  restored.endpoints.restoreHealth(rebaseHealth(stored, restored.clock.now()));
  return { original, restored };
}

describe('endpoint health restored on a new clock', () => {
  it('a resumed clock 20 s before the export paces the backup as the original would, not 20 s longer', () => {
    // Four calls in a minute fill the RPM of 4: the original waits for the first one to leave the window.
    const { original, restored } = restoredAt(
      Array.from({ length: 4 }, () => ({ gapMs: 1_000, kind: 'ok' as const })),
      -20_000,
    );
    const before = waitOf(original);
    expect(before).toBeGreaterThan(50_000);
    expect(waitOf(restored)).toBeLessThanOrEqual(before + SLOT_MS);
    expect(waitOf(restored)).toBeGreaterThanOrEqual(before);
  });

  it('a document of an older release (no export time) is dated by its newest unit: no 20 s of extra pacing either', () => {
    const { original, restored } = restoredAt(
      Array.from({ length: 4 }, () => ({ gapMs: 1_000, kind: 'ok' as const })),
      -20_000,
      true,
    );
    expect(waitOf(restored)).toBeLessThanOrEqual(waitOf(original) + SLOT_MS);
  });

  it('property: every restored wait, at every later moment, is at most what the original had left (one slot of rounding)', () => {
    const step = fc.record({
      gapMs: fc.integer({ min: 0, max: 8_000 }),
      kind: fc.constantFrom(...KINDS),
    });
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: -120_000, max: 120_000 }),
        fc.array(fc.integer({ min: 0, max: 40_000 }), { minLength: 1, maxLength: 6 }),
        (steps, gapMs, laters) => {
          const { original, restored } = restoredAt(steps, gapMs);
          // Time that passed for the original between its export and the resumed clock's start (none if before).
          original.clock.advance(Math.max(0, gapMs));
          for (const later of [0, ...laters]) {
            original.clock.advance(later);
            restored.clock.advance(later);
            const o = waitOf(original);
            const r = waitOf(restored);
            expect(r).toBeLessThanOrEqual(o + SLOT_MS);
          }
        },
      ),
      { seed: 4242, numRuns: 200 },
    );
  });
});
