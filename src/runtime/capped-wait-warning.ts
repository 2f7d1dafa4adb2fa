import type { Logger } from 'pino';

/** Who made the call whose asked-for wait was capped. */
export interface CappedWaitCall {
  /** The agent that asked; absent for a HALF-OPEN probe (the runtime's own call). */
  readonly agent?: string;
  readonly endpoint: string;
  readonly provider: string;
  /** `'probe'` for a HALF-OPEN probe. Default: an agent's call. */
  readonly tier?: string;
}

/**
 * Says, once per call, that a provider asked for a longer wait than `maxRetryAfterMs` and the cap was applied
 * instead: a cap is never silent (the call's event carries the asked-for wait too).
 *
 * @example
 * ```ts
 * warnCapped(logger, { agent: 'Kai', endpoint: 'primary', provider: 'anthropic' }, fault.retryAfterCappedFromMs);
 * ```
 */
export function warnCapped(logger: Logger, call: CappedWaitCall, askedMs: number): void {
  logger.warn(
    { ...call, askedMs },
    'the provider asked for a longer wait than maxRetryAfterMs; waiting the cap instead',
  );
}
