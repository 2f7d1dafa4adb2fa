import { breakerLabel } from '../../viz-event-handlers.ts';
import type { VizAgent, VizState } from '../../viz-state-types.ts';
import { own } from '../page-json.ts';
import { seconds } from '../time-format.ts';

/** Until when an endpoint (cooldown, credit disable, OPEN breaker) or the agent's own wait holds it back. */
function holdsUntil(a: VizAgent, state: VizState, endpoint: string | null): number {
  let until = a.state === 'cooling' && a.coolingUntil !== null ? a.coolingUntil : 0;
  const ep = endpoint ? own(state.endpoints, endpoint) : undefined;
  if (ep) {
    until = Math.max(until, ep.cooldownUntil, ep.disabledUntil);
    if (ep.breaker === 'open' && ep.openUntil !== null) until = Math.max(until, ep.openUntil);
  }
  return until;
}

/** Why an agent is where it is, in one line: its fault, where, and how long until it may try again. */
export function reasonText(a: VizAgent, state: VizState, now: number): string {
  if (!['fallback', 'degraded', 'cooling', 'queued'].includes(a.state)) return '';
  // Queued is the normal wait for a token: a reason only while its own fault still holds it back.
  if (a.state === 'queued' && !(a.reason && holdsUntil(a, state, a.reason.endpoint) > now)) return '';
  // No fault of its own: it moved on because an endpoint was already out (OPEN, disabled, cooling);
  // name the one that failed last.
  const skipped = a.reason
    ? undefined
    : Object.values(state.endpoints)
        .filter(
          (e) => e.lastFault && (e.breaker !== 'closed' || e.disabledUntil > now || e.cooldownUntil > now),
        )
        .sort((x, y) => y.lastFault!.at - x.lastFault!.at)[0];
  const r =
    a.reason ??
    (skipped
      ? {
          at: skipped.lastFault!.at,
          kind: skipped.lastFault!.kind,
          endpoint: skipped.id,
          status: skipped.lastFault!.status,
          retryAfterMs: null,
        }
      : null);
  if (!r) return '';
  const ep = r.endpoint ? own(state.endpoints, r.endpoint) : undefined;
  const until = holdsUntil(a, state, r.endpoint);
  const parts = [
    `${r.status !== null ? `${r.status} ` : ''}${r.kind} on ${r.endpoint ?? '?'}`,
    ep && ep.breaker !== 'closed' ? `breaker ${breakerLabel(ep.breaker)}` : '',
    r.retryAfterMs !== null ? `Retry-After ${seconds(r.retryAfterMs)}` : '',
    until > now ? `cooldown ${seconds(until - now)} left` : 'cooldown over',
  ];
  return parts.filter(Boolean).join(' · ');
}
