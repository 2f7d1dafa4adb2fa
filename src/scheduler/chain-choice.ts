import type { EndpointRegistry, Selection } from '../health/endpoint-registry.ts';
import type { SchedulerReport, TokenRequest } from './token-scheduler.ts';
import { skipOf, waitLeft } from './wait-rules.ts';

/**
 * Which endpoint of a request's chain it may take, or when: its chain (plus its session's BYOK keys), less what it
 * must skip, looked at in order. A request may wait for an earlier endpoint that comes back soon rather than take a
 * later one that is ready, when waiting ends its call sooner (see `EndpointRegistry.select`), but never longer than
 * what is left of its max wait.
 *
 * @example
 * ```ts
 * const choice = new ChainChoice(endpoints, endpointsFor);
 * choice.select(request, now); // { kind: 'ready', endpointId: 'primary', index: 0 }
 * ```
 */
export class ChainChoice {
  readonly #endpoints: EndpointRegistry;
  readonly #endpointsFor: ((request: TokenRequest) => readonly string[]) | undefined;

  constructor(endpoints: EndpointRegistry, endpointsFor?: (request: TokenRequest) => readonly string[]) {
    this.#endpoints = endpoints;
    this.#endpointsFor = endpointsFor;
  }

  /** The endpoint `request` may take now, or when; `spent`: its retries are spent (it may go only where untried). */
  select(request: TokenRequest, now: number, spent = false): Selection {
    return this.#endpoints.select(this.#ids(request), now, request.estimatedTokens, skipOf(request, spent), {
      waitUpToMs: waitLeft(request),
    });
  }

  /** The endpoints of `request`'s chain it may be granted on (a parked request waits on these only). */
  usableBy(request: TokenRequest, spent: boolean): readonly string[] {
    const ids = this.#ids(request);
    const skip = skipOf(request, spent);
    return skip ? ids.filter((id) => !skip.includes(id)) : ids;
  }

  #ids(request: TokenRequest): readonly string[] {
    return this.#endpointsFor?.(request) ?? this.#endpoints.chain(request.chain);
  }
}

/** The report of a wait chosen over a ready later endpoint (`sel.instead`), for `agent` at `now`. */
export function routeWaitReport(
  sel: Extract<Selection, { kind: 'wait' }>,
  agent: string,
  now: number,
): Extract<SchedulerReport, { type: 'route.wait' }> {
  const { endpointId, until, instead } = sel;
  return {
    type: 'route.wait',
    at: now,
    agent,
    endpointId,
    until,
    insteadOf: instead?.endpointId ?? endpointId,
    expectedMs: instead?.waitingExpectedMs ?? 0,
    insteadExpectedMs: instead?.expectedMs ?? 0,
  };
}
