import { describe, expect, it } from 'vitest';
import type { RatePermit } from '../../src/coordination/coordination-backend.ts';
import { backendsPerTest, coordinationCases } from '../support/coordination-env.ts';

/*
 * An endpoint's shared RPM/TPM window on the real backends, three connections standing for three processes. Times
 * are the backend server's: the verdicts use only what cannot depend on this machine's speed (counts within a
 * window far longer than the test, and "a permit counted between sending and answer" bounds).
 */

const backends = backendsPerTest();
const open = backends.open;

const MINUTE = 60_000;
/** A unit is held until its slot's end plus one window and one more slot: at most this long. */
const held = (windowMs: number) => (windowMs * 62) / 60 + 1;

/**
 * Waits at least `ms` of real time from now. A bare `setTimeout` counts whole milliseconds from the event loop's
 * cached, floored time, so it can fire up to a millisecond before `ms` have passed since the answer: told exactly
 * the time to the window's edge, the caller then asks a hair before the unit has left (failed once in 10 runs of
 * `npm run test:repeat` on the Redis backend).
 */
async function waitAtLeast(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now())
    await new Promise((r) => setTimeout(r, Math.ceil(left)));
}

describe.each(coordinationCases())('$name shared rate window', ({ options: make }) => {
  const three = async () => {
    const o = make();
    backends.track(o);
    return Promise.all([open(o, 'a'), open(o, 'b'), open(o, 'c')]);
  };

  it('three processes asking at once get at most the RPM in one window; the others are told when to look again', async () => {
    const [a, b, c] = await three();
    const ask = { key: 'sonnet', windowMs: MINUTE, rpm: 5, tpm: undefined, tokens: 100 };
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => [a, b, c][i % 3]!.takeRate(ask)));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    for (const r of results) {
      if (r.ok) expect(r.permit).toMatchObject({ key: 'sonnet', requests: 1, tokens: 0 });
      else {
        expect(r.retryInMs).toBeGreaterThan(0);
        expect(r.retryInMs).toBeLessThanOrEqual(held(MINUTE));
      }
    }
    // Another endpoint's quota is its own.
    expect((await a!.takeRate({ ...ask, key: 'haiku' })).ok).toBe(true);
  });

  it('TPM counts estimated tokens; a refund gives a call that never went back; a call above the TPM goes only into an empty window', async () => {
    const [a, b] = await three();
    const ask = { key: 'gpt', windowMs: MINUTE, rpm: undefined, tpm: 1_000, tokens: 400 };
    const first = await a!.takeRate(ask);
    expect((await b!.takeRate(ask)).ok).toBe(true);
    expect((await a!.takeRate(ask)).ok).toBe(false);
    if (!first.ok) throw new Error('no first permit');
    expect(first.permit.tokens).toBe(400);
    await a!.refundRate(first.permit);
    expect((await b!.takeRate(ask)).ok).toBe(true);
    // 5,000 tokens never fit 1,000: clamped, so it waits for an empty window instead of forever.
    const big = { ...ask, tokens: 5_000 };
    expect((await a!.takeRate(big)).ok).toBe(false);
    const alone = await a!.takeRate({ ...big, key: 'gpt-other' });
    expect(alone.ok && alone.permit.tokens).toBe(1_000);
    // Both limits at once: the request count and the tokens must each fit.
    const both = { key: 'both', windowMs: MINUTE, rpm: 3, tpm: 500, tokens: 200 };
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await [a, b][i % 2]!.takeRate(both)).ok);
    expect(answers).toEqual([true, true, false, false]);
  });

  it('a refund of a slot that already left the window changes nothing', async () => {
    const [a] = await three();
    const ask = { key: 'sonnet', windowMs: MINUTE, rpm: 2, tpm: undefined, tokens: 0 };
    expect((await a!.takeRate(ask)).ok).toBe(true);
    const gone: RatePermit = { key: 'sonnet', windowMs: MINUTE, slot: 1, requests: 1, tokens: 0 };
    await a!.refundRate(gone);
    expect((await a!.takeRate(ask)).ok).toBe(true);
    expect((await a!.takeRate(ask)).ok).toBe(false);
  });

  it('units leave the window after it: a refused caller that waits the time it was told gets its permit', async () => {
    const [a, b] = await three();
    const windowMs = 3_000;
    const ask = { key: 'sonnet', windowMs, rpm: 2, tpm: undefined, tokens: 0 };
    expect((await a!.takeRate(ask)).ok).toBe(true);
    expect((await b!.takeRate(ask)).ok).toBe(true);
    const refused = await a!.takeRate(ask);
    if (refused.ok) throw new Error('a third permit inside one window');
    expect(refused.retryInMs).toBeLessThanOrEqual(held(windowMs));
    await waitAtLeast(refused.retryInMs);
    expect((await a!.takeRate(ask)).ok).toBe(true);
  });

  it('three processes taking in a loop never have RPM + 1 permits within one window', async () => {
    const procs = await three();
    const windowMs = 600;
    const rpm = 4;
    const ask = { key: 'loop', windowMs, rpm, tpm: undefined, tokens: 0 };
    // Each permit was counted at some instant between its sending and its answer (this process's clock).
    const permits: { sent: number; answered: number }[] = [];
    const until = performance.now() + 4 * windowMs;
    await Promise.all(
      procs.map(async (p) => {
        while (performance.now() < until) {
          const sent = performance.now();
          const r = await p.takeRate(ask);
          if (r.ok) permits.push({ sent, answered: performance.now() });
          else await new Promise((resolve) => setTimeout(resolve, r.retryInMs));
        }
      }),
    );
    expect(permits.length).toBeGreaterThanOrEqual(rpm);
    // RPM + 1 permits whose counting instants all fall in less than a window are a breach: from each permit's
    // sending, the RPM + 1 earliest answers among the permits sent since must span a whole window.
    for (const first of permits) {
      const answers = permits
        .filter((q) => q.sent >= first.sent)
        .map((q) => q.answered)
        .sort((x, y) => x - y);
      if (answers.length > rpm) expect(answers[rpm]! - first.sent).toBeGreaterThanOrEqual(windowMs);
    }
  });
});
