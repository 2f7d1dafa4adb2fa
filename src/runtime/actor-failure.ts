import type { Logger } from 'pino';
import type { Clock } from '../clock/clock.ts';
import { InternalActorError } from '../core/errors/internal-error.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';

/*
 * A bug in an agent actor's body reaches the agent machine as data (an InternalActorError, its text scrubbed of
 * secrets), never as an exception thrown into XState, and the log has it once.
 */

/** An error an actor's body threw (a bug), as the machine may see it: sanitized, stamped, and logged. */
export function sanitized(logger: Logger, clock: Clock, what: string, e: unknown): InternalActorError {
  if (e instanceof InternalActorError) return e;
  const safe = scrubSecrets(e instanceof Error ? e.message : String(e));
  logger.error({ actor: what, error: safe }, 'agent actor failed');
  return new InternalActorError(safe, { cause: e, at: clock.now() });
}

/** Runs an actor's body; an error it throws (a bug) reaches the machine sanitized, and the log has it. */
export async function guarded<T>(
  logger: Logger,
  clock: Clock,
  what: string,
  body: () => Promise<T>,
): Promise<T> {
  try {
    return await body();
  } catch (e) {
    throw sanitized(logger, clock, what, e);
  }
}
