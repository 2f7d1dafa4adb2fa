import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { MEMO_WRITE_RETRY_MS } from '../store-call-memo.ts';
import { type PartClaim, renewParts } from './round-parts.ts';

/** The parts a worker holds while it asks their turns: renewed by heartbeat until it lets them go. */
export interface HeldParts {
  /** Aborts when the parts are lost: taken over, or they could not be renewed before their lease ran out. */
  readonly lost: AbortSignal;
  /** A part staged: no longer renewed. */
  release(claim: PartClaim): void;
  /** Stops the heartbeat (the interval is ref'd: left running, it would keep the process alive). */
  stop(): void;
}

/**
 * Holds claimed parts by heartbeat (every third of the TTL). A worker whose lease was taken over, or may have run
 * out (it could not renew in time: a pause, a partition, its database connections cut), must stop asking: the new
 * holder asks those turns, and its stage would be refused anyway. Stopping once the lease MAY have run out, by this
 * process's own monotonic clock (`leaseFrom` is `performance.now()` a moment before the claims were made: a wall
 * clock set back would stretch the lease), is what lets a new holder wait a bounded time for this one's memo writes
 * ({@link takeoverAfterMs}) and never ask again a call this one was answered.
 */
export function holdParts(
  database: Pick<BreakwaterDatabase, 'db'>,
  claims: readonly PartClaim[],
  ttlMs: number,
  leaseFrom: number,
): HeldParts {
  const lost = new AbortController();
  const pending = new Set(claims);
  let leaseUntil = leaseFrom + ttlMs;
  const heartbeat = setInterval(
    () => {
      if (performance.now() >= leaseUntil) {
        lost.abort(new Error('the parts could not be renewed before their lease ran out'));
        return;
      }
      const renewedFrom = performance.now();
      void renewParts(database, [...pending], ttlMs).then(
        (gone) => {
          if (gone.length > 0)
            lost.abort(new Error(`parts taken over: ${gone.map((c) => c.agent).join(', ')}`));
          else leaseUntil = Math.max(leaseUntil, renewedFrom + ttlMs);
        },
        () => {},
      );
    },
    Math.max(50, Math.floor(ttlMs / 3)),
  );
  return {
    lost: lost.signal,
    release: (claim) => pending.delete(claim),
    stop: () => clearInterval(heartbeat),
  };
}

/**
 * How long after a part's lease ran out another worker may take it over: the old holder stops asking within a
 * heartbeat of its lease running out (holdParts), and the answers it had by then are written within the memo's
 * retry window; a TTL more covers the heartbeat and the two clocks. A worker that died costs its parts this wait.
 */
export function takeoverAfterMs(leaseTtlMs: number): number {
  return MEMO_WRITE_RETRY_MS + leaseTtlMs;
}
