import type { Turn } from '../core/turn.ts';

/**
 * A turn that ended `failed` under `generateText`/`streamText`: a fault no engine swap fixes (a bad request, a
 * bug). The AI SDK rethrows it; `turn` holds what happened (its `error`, its `faults`).
 *
 * @example
 * ```ts
 * try { await generateText({ model: bw('premium'), prompt }); }
 * catch (e) { if (isBreakwaterTurnFailedError(e)) console.log(e.turn.faults); else throw e; }
 * ```
 */
export class BreakwaterTurnFailedError extends Error {
  readonly code = 'TURN_FAILED' as const;
  readonly turn: Turn;
  constructor(turn: Turn) {
    super(`breakwater: the call failed: ${turn.error ?? 'no engine could answer'}`);
    this.name = 'BreakwaterTurnFailedError';
    this.turn = turn;
  }
}

/**
 * Type guard for {@link BreakwaterTurnFailedError}.
 *
 * @example
 * ```ts
 * if (isBreakwaterTurnFailedError(e)) console.log(e.turn.error);
 * ```
 */
export function isBreakwaterTurnFailedError(e: unknown): e is BreakwaterTurnFailedError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'TURN_FAILED';
}

/**
 * The prompt holds a part breakwater's engines cannot send (files, images, provider-executed tools): refused
 * before anything is sent rather than sent without it.
 *
 * @example
 * ```ts
 * if (isUnsupportedPromptError(e)) console.log(e.part); // 'file'
 * ```
 */
export class UnsupportedPromptError extends Error {
  readonly code = 'UNSUPPORTED_PROMPT' as const;
  /** The kind of part refused. */
  readonly part: string;
  constructor(part: string, where: string) {
    super(`breakwater: a ${part} part in a ${where} message cannot be sent (text and tool calls only)`);
    this.name = 'UnsupportedPromptError';
    this.part = part;
  }
}

/**
 * Type guard for {@link UnsupportedPromptError}.
 *
 * @example
 * ```ts
 * if (isUnsupportedPromptError(e)) console.log(e.message);
 * ```
 */
export function isUnsupportedPromptError(e: unknown): e is UnsupportedPromptError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'UNSUPPORTED_PROMPT';
}
