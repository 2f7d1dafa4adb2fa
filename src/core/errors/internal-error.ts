/**
 * A bug inside one of the runtime's own actors (a call memo that threw, a broken tool host), carried to the agent
 * machine with a message already sanitized where the error entered: the turn's error text may quote
 * `safeMessage`, never the raw error.
 *
 * @example
 * ```ts
 * throw new InternalActorError(scrubSecrets(e.message), { cause: e, at: clock.now() });
 * ```
 */
export class InternalActorError extends Error {
  readonly code = 'INTERNAL_ACTOR_ERROR' as const;
  /** The error's text with every secret removed: safe to store and print. */
  readonly safeMessage: string;
  /** When it happened, on the runtime's clock (the turn it ends is stamped with it). */
  readonly at: number | undefined;
  constructor(safeMessage: string, options?: { cause?: unknown; at?: number }) {
    super(safeMessage, options);
    this.name = 'InternalActorError';
    this.safeMessage = safeMessage;
    this.at = options?.at;
  }
}

/** Type guard for {@link InternalActorError}. */
export function isInternalActorError(e: unknown): e is InternalActorError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'INTERNAL_ACTOR_ERROR';
}
