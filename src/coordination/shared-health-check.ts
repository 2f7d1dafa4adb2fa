import type { SharedHealthFacts, SharedHealthMessage, SharedWindow } from './coordination-backend.ts';

/*
 * Health messages and stored rows come from other processes (or anyone who can write to the pool's channel): each
 * is checked field by field and rebuilt from what is known, so a malformed one is dropped instead of crashing the
 * listener, and a well-formed one carries nothing else.
 */

const isInstant = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function checkWindow(v: unknown): SharedWindow | undefined | false {
  if (v === undefined) return undefined;
  if (!isRecord(v)) return false;
  const out: { limit?: number; remaining?: number; resetAt?: number } = {};
  for (const k of ['limit', 'remaining', 'resetAt'] as const) {
    if (v[k] === undefined) continue;
    if (!isInstant(v[k])) return false;
    out[k] = v[k];
  }
  return out;
}

/**
 * The facts of a health message or stored row, checked: every deadline a finite number ≥ 0, `openUntil` a number
 * or null, the counts' fields numbers; `undefined` when anything is malformed.
 *
 * @example
 * ```ts
 * const facts = checkSharedHealthFacts(JSON.parse(row));
 * if (facts) absorb(endpointId, facts);
 * ```
 */
export function checkSharedHealthFacts(v: unknown): SharedHealthFacts | undefined {
  if (!isRecord(v)) return undefined;
  if (!isInstant(v.cooldownUntil) || !isInstant(v.disabledUntil)) return undefined;
  if (v.openUntil !== null && !isInstant(v.openUntil)) return undefined;
  if (v.disabledReason !== undefined && typeof v.disabledReason !== 'string') return undefined;
  if (v.observedAt !== undefined && !isInstant(v.observedAt)) return undefined;
  // A count, kept small: each failed probe doubles the backoff, which maxOpenMs caps long before 64.
  if (
    v.failedProbes !== undefined &&
    !(Number.isSafeInteger(v.failedProbes) && (v.failedProbes as number) >= 0)
  )
    return undefined;
  const requests = checkWindow(v.requests);
  const tokens = checkWindow(v.tokens);
  if (requests === false || tokens === false) return undefined;
  return {
    cooldownUntil: v.cooldownUntil,
    disabledUntil: v.disabledUntil,
    ...(v.disabledReason !== undefined ? { disabledReason: v.disabledReason.slice(0, 500) } : {}),
    openUntil: v.openUntil,
    ...(v.failedProbes !== undefined ? { failedProbes: Math.min(v.failedProbes as number, 64) } : {}),
    ...(requests ? { requests } : {}),
    ...(tokens ? { tokens } : {}),
    ...(v.observedAt !== undefined ? { observedAt: v.observedAt } : {}),
  };
}

/**
 * A health message as received (parsed JSON of unknown shape), checked: a non-empty `endpointId`, a string `from`
 * and valid facts ({@link checkSharedHealthFacts}); `undefined` when anything is malformed.
 *
 * @example
 * ```ts
 * const m = checkSharedHealthMessage(JSON.parse(payload));
 * if (m) for (const l of listeners) l(m);
 * ```
 */
export function checkSharedHealthMessage(v: unknown): SharedHealthMessage | undefined {
  if (!isRecord(v)) return undefined;
  if (typeof v.endpointId !== 'string' || v.endpointId === '' || typeof v.from !== 'string') return undefined;
  const facts = checkSharedHealthFacts(v.facts);
  return facts && { endpointId: v.endpointId, facts, from: v.from };
}
