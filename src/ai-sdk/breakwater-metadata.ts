import type { JSONObject } from '@ai-sdk/provider';
import { isWhole, usageSource } from '../core/token-usage.ts';
import type { Turn } from '../core/turn.ts';

/**
 * Which endpoint answered and what was met on the way: `result.providerMetadata.breakwater`.
 *
 * @example
 * ```ts
 * const m = result.providerMetadata?.breakwater as BreakwaterMetadata;
 * console.log(m.outcome, m.endpointId, m.faults);
 * ```
 */
export interface BreakwaterMetadata extends JSONObject {
  /** `answered` (the chain's first endpoint), `fallback` (a later one) or `degraded` (no engine could answer). */
  outcome: string;
  /** The endpoint that answered; absent when degraded. */
  endpointId?: string;
  /** The model the provider reported. */
  model?: string;
  /**
   * The turn's answer text. After a streamed restart `result.text` also holds the withdrawn text (AI SDK stream
   * parts cannot be taken back); this never does.
   */
  text: string;
  degraded: boolean;
  degradedReason?: string;
  /** Every fault met, in order: kind, endpoint, HTTP status and message. */
  faults: Array<{ kind: string; endpointId?: string; status?: number; message: string }>;
  /** Upstream calls made (retries and fallbacks included). */
  attempts: number;
  /** Time spent waiting for a token or a cooldown, ms. */
  waitMs: number;
  turnId: string;
  /**
   * Whether the providers reported the turn's token counts (`reported`, `partial`, `unknown`; `usage` has only the
   * wholly reported ones), the reported part of a count some calls did not report, and breakwater's estimates
   * (characters ÷ 4) of what was not reported: estimates, never measured.
   */
  usage: {
    source: string;
    reportedInputTokens?: number;
    reportedOutputTokens?: number;
    estimatedInputTokens?: number;
    estimatedOutputTokens?: number;
  };
}

/** Whether the providers reported the turn's counts, the reported part of one not wholly reported, and the estimate. */
function usageMetadataOf(turn: Turn): BreakwaterMetadata['usage'] {
  const u = turn.usage;
  const partOf = (n: number | null, whole: boolean) => (n !== null && !whole ? n : undefined);
  const reportedIn = partOf(u.inputTokens, isWhole(u, 'inputTokens'));
  const reportedOut = partOf(u.outputTokens, isWhole(u, 'outputTokens'));
  return {
    source: usageSource(u),
    ...(reportedIn !== undefined ? { reportedInputTokens: reportedIn } : {}),
    ...(reportedOut !== undefined ? { reportedOutputTokens: reportedOut } : {}),
    ...(u.estimated?.inputTokens !== undefined ? { estimatedInputTokens: u.estimated.inputTokens } : {}),
    ...(u.estimated?.outputTokens !== undefined ? { estimatedOutputTokens: u.estimated.outputTokens } : {}),
  };
}

/** The turn's `providerMetadata.breakwater`. */
export function metadataOf(turn: Turn): BreakwaterMetadata {
  return {
    outcome: turn.outcome,
    ...(turn.endpointId !== undefined ? { endpointId: turn.endpointId } : {}),
    ...(turn.model !== undefined ? { model: turn.model } : {}),
    text: turn.answer.text,
    degraded: turn.degraded,
    usage: usageMetadataOf(turn),
    ...(turn.degradedReason !== undefined ? { degradedReason: turn.degradedReason } : {}),
    faults: turn.faults.map((f) => ({
      kind: f.kind,
      ...(f.endpointId !== undefined ? { endpointId: f.endpointId } : {}),
      ...(f.status !== undefined ? { status: f.status } : {}),
      message: f.message,
    })),
    attempts: turn.attempts,
    waitMs: turn.waitMs,
    turnId: turn.turnId,
  };
}
