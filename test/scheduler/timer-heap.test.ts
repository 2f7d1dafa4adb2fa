import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { TimerHeap } from '../../src/clock/timer-heap.ts';

describe('timer heap', () => {
  it('fires deadlines in order (ties in scheduling order) behind one clock timer', () => {
    const clock = createManualClock(0);
    const timers = new TimerHeap(clock);
    const fired: string[] = [];
    for (const [at, name] of [
      [300, 'c'],
      [100, 'a'],
      [200, 'b1'],
      [200, 'b2'],
    ] as const)
      timers.schedule(at, () => fired.push(`${name}@${clock.now()}`));
    expect(clock.pending()).toBe(1);
    expect(timers.size).toBe(4);
    clock.advance(250);
    expect(fired).toEqual(['a@100', 'b1@200', 'b2@200']);
    clock.advance(50);
    expect(fired.at(-1)).toBe('c@300');
    expect(clock.pending()).toBe(0);
  });

  it('a cancelled deadline never fires; an earlier one re-arms the clock; a past one fires on the next firing', () => {
    const clock = createManualClock(1_000);
    const timers = new TimerHeap(clock);
    const fired: number[] = [];
    const late = timers.schedule(5_000, () => fired.push(5_000));
    timers.schedule(2_000, () => fired.push(2_000));
    late.cancel();
    expect(timers.size).toBe(1);
    clock.advance(1_000);
    expect(fired).toEqual([2_000]);
    expect(clock.pending()).toBe(0);
    timers.schedule(clock.now() - 10, () => fired.push(-1));
    clock.advance(0);
    expect(fired).toEqual([2_000, -1]);
  });

  it('thousands of cancelled deadlines are swept, not kept', () => {
    const clock = createManualClock(0);
    const timers = new TimerHeap(clock);
    const entries = Array.from({ length: 10_000 }, (_, i) => timers.schedule(1_000 + i, () => {}));
    for (const e of entries.slice(0, 9_990)) e.cancel();
    expect(timers.size).toBe(10);
    let fired = 0;
    timers.schedule(10, () => fired++);
    clock.advance(20_000);
    expect(fired).toBe(1);
    expect(timers.size).toBe(0);
  });

  it('one throwing callback does not stop the others due with it', () => {
    const clock = createManualClock(0);
    const timers = new TimerHeap(clock);
    const fired: string[] = [];
    timers.schedule(10, () => {
      throw new Error('boom');
    });
    timers.schedule(10, () => fired.push('after'));
    expect(() => clock.advance(10)).toThrow('boom');
    expect(fired).toEqual(['after']);
  });
});
