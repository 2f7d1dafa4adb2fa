import type { Logger } from 'pino';
import type { CallMemo } from '../core/call-memo.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';

/**
 * Writes a finished call's (or tool's) result to the memo. Durable before the call is reported done, but never
 * holding a token (callers release it first). A failed write is logged, not fatal: the round's commit still
 * records the turn; only a crash before it re-asks. Without a memo it does nothing.
 *
 * @example
 * ```ts
 * const remember = memoWriter(memo, logger);
 * await remember(`${turnKey}:call0`, result);
 * ```
 */
export function memoWriter(
  memo: CallMemo | undefined,
  logger: Logger,
): (key: string, value: unknown) => Promise<void> {
  return async (key, value) => {
    if (!memo) return;
    try {
      await memo.remember(key, value);
    } catch (e) {
      logger.warn(
        { key, error: scrubSecrets(e instanceof Error ? e.message : String(e)) },
        'call memo write failed',
      );
    }
  };
}
