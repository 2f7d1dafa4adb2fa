import type { Clock } from '../clock/clock.ts';

/**
 * Emulated time: `timeScale` emulated ms pass per real (clock) ms, so a 60 s quota window lasts
 * one real second at scale 60. The scale can change mid-run; time stays continuous across it.
 */
export interface EmulatedTime {
  /** Emulated ms since the emulator started. */
  now(): number;
  /** Converts an emulated duration to real (clock) ms. */
  toReal(emulatedMs: number): number;
  readonly scale: number;
  setScale(scale: number): void;
}

/** Creates the emulated timeline, starting at 0 now. */
export function createEmulatedTime(clock: Clock, scale: number): EmulatedTime {
  let realBase = clock.now();
  let emuBase = 0;
  let current = scale;
  const now = () => emuBase + (clock.now() - realBase) * current;
  return {
    now,
    toReal: (ms) => ms / current,
    get scale() {
      return current;
    },
    setScale(next) {
      emuBase = now();
      realBase = clock.now();
      current = next;
    },
  };
}
