import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createManualClock, sleep } from '../../src/clock/clock.ts';

describe('sleep on a shared signal', () => {
  it('many sleeps on one signal add one abort listener; those that fired resolve, an abort rejects every pending one', async () => {
    const clock = createManualClock(0);
    const controller = new AbortController();
    // A round of 40 turns all waiting for their firing time on the run's signal (Node warns at 11 listeners).
    const early = Array.from({ length: 20 }, (_, i) => sleep(clock, 1_000 + i, controller.signal));
    const late = Array.from({ length: 20 }, (_, i) => sleep(clock, 60_000 + i, controller.signal));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    clock.advance(2_000);
    await Promise.all(early);
    const settled = late.map((p) =>
      p.then(
        () => 'resolved',
        (e: unknown) => e,
      ),
    );
    controller.abort(new Error('stopped'));
    for (const outcome of await Promise.all(settled)) expect((outcome as Error).message).toBe('stopped');
  });
});
