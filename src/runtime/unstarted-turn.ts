import type { Turn } from '../core/turn.ts';
import { NO_USAGE } from '../core/token-usage.ts';

/** A turn that ended `cancelled` without having started: nothing was sent, nothing changed. */
export function unstartedCancelledTurn(
  agent: string,
  tier: string,
  ask: { turnId: string; prompt: string },
  at: number,
): Turn {
  return {
    turnId: ask.turnId,
    agent,
    tier,
    prompt: ask.prompt,
    answer: { text: '' },
    outcome: 'cancelled',
    degraded: false,
    faults: [],
    waitMs: 0,
    attempts: 0,
    usage: NO_USAGE,
    messages: [],
    startedAt: at,
    finishedAt: at,
    error: 'cancelled before it started; nothing was sent',
  };
}
