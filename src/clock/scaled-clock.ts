import { type Clock, hostDelay } from './clock.ts';

/** Options of {@link createScaledClock}. */
export interface ScaledClockOptions {
  /** Simulated epoch ms at the moment the clock is created. Default: the real now. */
  readonly origin?: number;
  /** Simulated ms per real ms (60 = one simulated minute per real second). Default 1. */
  readonly scale?: number;
  /** The real clock underneath. Default `Date.now` and the host timers. */
  readonly realNow?: () => number;
  /**
   * The real instant (of `realNow`) at which the clock reads `origin`. Default: when the clock is created. Clocks of
   * several processes given the same `origin` and `realStart` read the same time (to the wall clock's precision).
   */
  readonly realStart?: number;
}

/**
 * Wall-clock epoch ms with sub-ms precision (`performance.timeOrigin + performance.now()`): at a scale of 150, the
 * whole ms of `Date.now()` is 150 simulated ms, enough to put one process's call before another's it followed.
 *
 * @example
 * ```ts
 * createScaledClock({ origin, realStart: wallStart, realNow: preciseWallNow, scale: 150 });
 * ```
 */
export function preciseWallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** A clock whose time runs `scale` times faster than real time. */
export interface ScaledClock extends Clock {
  readonly scale: number;
  /** Converts a simulated duration to real ms. */
  toRealMs(simulatedMs: number): number;
}

/**
 * A clock for time-scaled scenarios: an hour-long morning peak replays in a minute. Hand the same clock
 * to the runtime and to the emulator, and every cooldown, quota window, Retry-After, latency and cron
 * firing shrinks alike, while all reported times stay in simulated time.
 *
 * @example
 * ```ts
 * const clock = createScaledClock({ origin: Date.parse('2026-08-17T06:00:00+09:00'), scale: 150 });
 * clock.setTimeout(() => console.log('07:00 KST'), 60 * 60_000); // fires after 24 real seconds
 * ```
 */
export function createScaledClock(options: ScaledClockOptions = {}): ScaledClock {
  const realNow = options.realNow ?? (() => Date.now());
  const scale = options.scale ?? 1;
  if (!(scale > 0) || !Number.isFinite(scale))
    throw new RangeError(`scale must be a positive number (got ${scale})`);
  const realStart = options.realStart ?? realNow();
  const origin = options.origin ?? realStart;
  return Object.freeze({
    scale,
    now: () => origin + (realNow() - realStart) * scale,
    setTimeout(fn: () => void, ms: number) {
      const t = setTimeout(fn, hostDelay(Math.max(0, ms) / scale));
      t.unref?.();
      return t;
    },
    clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
    toRealMs: (simulatedMs: number) => simulatedMs / scale,
  });
}

/**
 * True for a clock made by {@link createScaledClock}: simulated time, not the wall clock (whatever its
 * scale: a resumed run's clock at scale 1 still starts from a simulated instant).
 *
 * @example
 * ```ts
 * isScaledClock(createScaledClock({ scale: 60 })); // true
 * isScaledClock(systemClock);                      // false
 * ```
 */
export function isScaledClock(clock: Clock): clock is ScaledClock {
  const c = clock as Partial<ScaledClock>;
  return typeof c.scale === 'number' && typeof c.toRealMs === 'function';
}
