import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';

/**
 * Runs `expire` once the I/O this process already holds has been read. A deadline timer that fires after the process
 * was starved of CPU (a loaded machine) runs in the event loop's timers phase, before the poll phase reads the response
 * that arrived meanwhile: without this, a starved process cut calls whose answer was already in its socket. Two
 * check-phase hops let that I/O be read first; the clock is held meanwhile, so a virtual clock does not move.
 */
export function afterPendingIo(clock: Clock, expire: () => void): void {
  const unhold = holdClock(clock);
  setImmediate(() =>
    setImmediate(() => {
      unhold();
      expire();
    }),
  );
}
