import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { describeEndpoint } from '../../src/engines/endpoint-config.ts';
import { EndpointHealthTracker } from '../../src/health/endpoint-health.ts';
import type { EndpointHealthHooks, HealthSettings } from '../../src/health/endpoint-health-types.ts';
import { TimerHeap } from '../../src/clock/timer-heap.ts';
import { endpoint, fault, success, T0 } from '../scheduler/scheduler-fixture.ts';

const SETTINGS: HealthSettings = {
  breaker: { openMs: 30_000, consecutiveToOpen: 3, probesToClose: 2 },
  baseBackoffMs: 500,
  maxBackoffMs: 30_000,
  creditCooldownMs: 3_600_000,
  adaptive: false,
  defaultConcurrency: 3,
};

function tracker(
  limits: { rpm?: number; tpm?: number; maxConcurrency?: number } = {},
  settings: Partial<HealthSettings> = {},
) {
  const clock = createManualClock(T0);
  const timers = new TimerHeap(clock);
  const seen = { probeWanted: 0, readiness: 0, breaker: [] as string[] };
  const hooks: EndpointHealthHooks = {
    onProbeWanted: () => seen.probeWanted++,
    onReadinessChange: () => seen.readiness++,
    onBreakerChange: (c) => seen.breaker.push(`${c.previous}→${c.state}`),
  };
  const health = new EndpointHealthTracker(
    'mini',
    describeEndpoint(endpoint('mini')),
    limits,
    { ...SETTINGS, ...settings },
    timers,
    hooks,
    () => 0.5,
  );
  /** One call granted now that ends with `outcome`. */
  const call = (outcome: Parameters<EndpointHealthTracker['settle']>[0]) => {
    health.take(100, clock.now());
    health.settle(outcome, 100, clock.now());
  };
  return { clock, timers, health, seen, call };
}

describe('endpoint health — cooldown, breaker, probes', () => {
  it('a 429 cools the endpoint for its Retry-After, no longer', () => {
    const t = tracker();
    t.call(fault('rate_limited', { status: 429, retryAfterMs: 7_000 }));
    expect(t.health.readiness(t.clock.now(), 100)).toEqual({ until: T0 + 7_000, cause: 'cooldown' });
    t.clock.advance(7_000);
    expect(t.health.readiness(t.clock.now(), 100)).toBeUndefined();
  });

  it('without Retry-After the cooldown is a jittered backoff that grows with consecutive faults', () => {
    const t = tracker();
    t.call(fault('server_error'));
    expect(t.health.view(t.clock.now()).cooldownUntil).toBe(T0 + 250); // 0.5 × 500
    t.clock.advance(250);
    t.call(fault('server_error'));
    expect(t.health.view(t.clock.now()).cooldownUntil).toBe(t.clock.now() + 500); // 0.5 × 1000
  });

  it('3 consecutive faults open it; its one timer moves it to HALF-OPEN at openUntil; 2 good probes close it', () => {
    const t = tracker();
    for (let i = 0; i < 3; i++) t.call(fault('network'));
    expect(t.health.breakerState).toBe('open');
    expect(t.health.readiness(t.clock.now(), 100)?.cause).toBe('open');
    // Exactly one deadline in the heap drives OPEN → HALF-OPEN (no actor timer beside it).
    expect(t.timers.size).toBe(1);
    t.clock.advance(29_999);
    expect(t.health.breakerState).toBe('open');
    expect(t.seen.probeWanted).toBe(0);
    t.clock.advance(1);
    expect(t.health.breakerState).toBe('halfOpen');
    expect(t.seen.probeWanted).toBe(1);
    expect(t.health.wantsProbe()).toBe(true);

    t.health.startProbe(t.clock.now());
    expect(t.health.wantsProbe()).toBe(false);
    expect(t.health.inFlight).toBe(1);
    t.health.settleProbe(success('mini'), t.clock.now());
    expect(t.health.breakerState).toBe('halfOpen');
    expect(t.seen.probeWanted).toBe(2); // the next probe, at once
    t.health.startProbe(t.clock.now());
    t.health.settleProbe(success('mini'), t.clock.now());
    expect(t.health.breakerState).toBe('closed');
    expect(t.health.readiness(t.clock.now(), 100)).toBeUndefined();
    expect(t.seen.breaker).toEqual(['closed→open', 'open→halfOpen', 'halfOpen→closed']);
    expect(t.health.inFlight).toBe(0);
  });

  it('reading readiness never moves the breaker: past openUntil before its tick it still says open', () => {
    const t = tracker();
    for (let i = 0; i < 3; i++) t.call(fault('network'));
    const openUntil = t.health.view(t.clock.now()).openUntil!;
    // It waits for its probe: `until` is the next look, not a known end (`probing`).
    expect(t.health.readiness(openUntil + 10, 100)).toEqual({
      until: openUntil + 1_010,
      cause: 'open',
      probing: true,
    });
    expect(t.health.breakerState).toBe('open');
  });

  it('a bad probe reopens it for at least openMs (longer when Retry-After says so)', () => {
    const t = tracker();
    for (let i = 0; i < 3; i++) t.call(fault('network'));
    t.clock.advance(30_000);
    t.health.startProbe(t.clock.now());
    t.health.settleProbe(fault('rate_limited', { retryAfterMs: 90_000 }), t.clock.now());
    expect(t.health.breakerState).toBe('open');
    expect(t.health.view(t.clock.now()).openUntil).toBe(t.clock.now() + 90_000);
  });

  it('a probe abandoned by its runner (settled unused) stays HALF-OPEN with nothing counted; a cancellation from the endpoint is a failed probe', () => {
    const t = tracker();
    for (let i = 0; i < 3; i++) t.call(fault('network'));
    t.clock.advance(30_000);
    for (let i = 0; i < 2; i++) {
      const ended = { kind: 'unused' } as const;
      t.health.startProbe(t.clock.now());
      t.health.settleProbe(ended, t.clock.now());
      expect(t.health.breakerState).toBe('halfOpen');
      expect(t.health.wantsProbe()).toBe(true);
      expect(t.health.inFlight).toBe(0);
    }
    expect(t.health.view(t.clock.now()).failedProbes).toBeUndefined();
    // A failure after them (an HTTP 499 the endpoint sent is one) is the first failed probe: the base cooldown,
    // not one lengthened by them.
    t.health.startProbe(t.clock.now());
    t.health.settleProbe(fault('cancelled'), t.clock.now());
    expect(t.health.view(t.clock.now()).failedProbes).toBe(1);
    expect(t.health.view(t.clock.now()).openUntil).toBe(t.clock.now() + 30_000);
  });

  it('credit exhausted disables the key for creditCooldownMs, or as long as the fault says', () => {
    const t = tracker();
    t.call(fault('credit_exhausted', { status: 429 }));
    expect(t.health.readiness(t.clock.now(), 100)).toEqual({ until: T0 + 3_600_000, cause: 'disabled' });
    expect(t.health.view(t.clock.now()).disabledReason).toBe('credit exhausted');

    const daily = tracker();
    const untilReset = 5 * 3_600_000;
    daily.call(
      fault('credit_exhausted', {
        status: 429,
        disableForMs: untilReset,
        disableReason: 'per-day quota Q exhausted, until the daily reset',
      } as never),
    );
    expect(daily.health.readiness(daily.clock.now(), 100)).toEqual({
      until: T0 + untilReset,
      cause: 'disabled',
    });
    expect(daily.health.view(daily.clock.now()).disabledReason).toBe(
      'per-day quota Q exhausted, until the daily reset',
    );
  });
});

describe('endpoint health — buckets and concurrency', () => {
  it('RPM pacing from the config, corrected by the headers: remaining 0 holds until the reset instant', () => {
    const t = tracker({ rpm: 60 });
    t.call(success('mini', { requests: { limit: 60, remaining: 0, resetAt: T0 + 20_000 } }));
    expect(t.health.readiness(t.clock.now(), 100)).toEqual({ until: T0 + 20_000, cause: 'pacing' });
    t.clock.advance(20_000);
    expect(t.health.readiness(t.clock.now(), 100)).toBeUndefined();
  });

  it('headers never raise a configured limit: a key allowing 10 000 RPM still paces at the 10 the config says', () => {
    const t = tracker({ rpm: 10, tpm: 5_000 });
    for (let i = 0; i < 10; i++)
      t.call(
        success('mini', {
          requests: { limit: 10_000, remaining: 9_999 - i },
          tokens: { limit: 2_000_000, remaining: 1_999_000 },
        }),
      );
    // Ten calls in this minute: the eleventh waits for the window, as the config asks.
    expect(t.health.readiness(t.clock.now(), 100)?.cause).toBe('pacing');
    expect(t.health.sharedLimits(t.clock.now())).toEqual({ rpm: 10, tpm: 5_000 });
  });

  it('headers may lower a configured limit and raise it back up to it, not beyond', () => {
    const t = tracker({ rpm: 10 });
    t.call(success('mini', { requests: { limit: 4, remaining: 3 } }));
    expect(t.health.sharedLimits(t.clock.now()).rpm).toBe(4);
    t.call(success('mini', { requests: { limit: 8, remaining: 6 } }));
    expect(t.health.sharedLimits(t.clock.now()).rpm).toBe(8);
    t.call(success('mini', { requests: { limit: 500, remaining: 497 } }));
    expect(t.health.sharedLimits(t.clock.now()).rpm).toBe(10);
  });

  it('an unused grant gives its request and tokens back', () => {
    const t = tracker({ rpm: 1, tpm: 1_000 });
    t.health.take(900, t.clock.now());
    expect(t.health.readiness(t.clock.now(), 900)?.cause).toBe('pacing');
    t.health.settle({ kind: 'unused' }, 900, t.clock.now());
    expect(t.health.readiness(t.clock.now(), 900)).toBeUndefined();
  });

  it('maxConcurrency and AIMD: a 429 halves the adaptive limit, successes grow it back', () => {
    const t = tracker({ maxConcurrency: 4 }, { adaptive: true });
    for (let i = 0; i < 4; i++) t.health.take(10, t.clock.now());
    expect(t.health.readiness(t.clock.now(), 10)).toEqual({ until: t.clock.now(), cause: 'concurrency' });
    t.health.settle(fault('rate_limited', { retryAfterMs: 0 }), 10, t.clock.now());
    expect(t.health.view(t.clock.now()).concurrencyLimit).toBe(2);
    for (let i = 0; i < 3; i++) t.health.settle(success('mini'), 10, t.clock.now());
    expect(t.health.inFlight).toBe(0);
    for (let i = 0; i < 20; i++) t.call(success('mini'));
    expect(t.health.view(t.clock.now()).concurrencyLimit).toBe(4);
  });

  it('every settle tells the scheduler the endpoint may be ready sooner (a slot or a refill came back)', () => {
    const t = tracker();
    t.call(success('mini'));
    t.call({ kind: 'unused' });
    t.call(fault('overloaded'));
    expect(t.seen.readiness).toBe(3);
  });
});

describe('endpoint health — the pool’s shared RPM/TPM window', () => {
  it('paceUntil paces the endpoint until then (never shortens it) and tells the scheduler', () => {
    const t = tracker({ rpm: 10 });
    const before = t.seen.readiness;
    t.health.paceUntil(T0 + 4_000);
    expect(t.seen.readiness).toBe(before + 1);
    t.health.paceUntil(T0 + 1_000);
    expect(t.health.readiness(t.clock.now(), 100)).toEqual({ until: T0 + 4_000, cause: 'pacing' });
    // Pacing, not a break in the chain.
    expect(t.health.usable(t.clock.now())).toBe(true);
    t.clock.advance(4_000);
    expect(t.health.readiness(t.clock.now(), 100)).toBeUndefined();
  });

  it('the shared limits are the configured ones, lowered (never raised) by what the headers said', () => {
    expect(tracker().health.sharedLimits(T0)).toEqual({ rpm: undefined, tpm: undefined });
    const t = tracker({ rpm: 10, tpm: 5_000 });
    expect(t.health.sharedLimits(T0)).toEqual({ rpm: 10, tpm: 5_000 });
    t.call(
      success('mini', { requests: { limit: 6, remaining: 5 }, tokens: { limit: 9_000, remaining: 8_000 } }),
    );
    expect(t.health.sharedLimits(t.clock.now())).toEqual({ rpm: 6, tpm: 5_000 });
  });
});
