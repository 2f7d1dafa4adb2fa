import type { Selection } from '../health/endpoint-registry.ts';
import type { TokenRequest } from './token-scheduler.ts';

/*
 * The scheduler's pure decisions about one request's wait, read from a selection and the request alone: whether
 * it keeps its place in the queue, may cool, or is denied (and the reason it is told).
 */

/** Why a retry is denied when the retry budget is spent and no untried endpoint is left. */
export const BUDGET_SPENT =
  'retry budget spent: too many retries in the last window, and no endpoint of the chain this call has not tried is left; answering degraded instead';

/** The endpoints `request` must not be granted on: its own `skip`, and every endpoint it tried once retries are `spent`. */
export function skipOf(request: TokenRequest, spent: boolean): readonly string[] | undefined {
  const { skip, tried } = request;
  if (!spent || !tried?.length) return skip?.length ? skip : undefined;
  return skip?.length ? [...skip, ...tried] : tried;
}

/** Waits that end by themselves soon (a refill, a free slot): the request keeps its place instead of cooling. */
function isRoomWait(cause: string): boolean {
  return cause === 'pacing' || cause === 'concurrency';
}

/** Whether a request keeps a place in the queue (ready, or waiting for room within its max wait). */
export function keepsPlace(sel: Selection, now: number, request: TokenRequest): boolean {
  if (sel.kind === 'ready') return true;
  return sel.kind === 'wait' && isRoomWait(sel.cause) && sel.until - now <= waitLeft(request);
}

/** What is left of `request`'s max wait after the cooling it already did since its last call, ms. */
export function waitLeft(request: TokenRequest): number {
  return request.maxWaitMs - (request.cooledMs ?? 0);
}

/**
 * Whether `request` may cool for `sel`: its earliest endpoint comes back within what is left of the max wait. A
 * probe's outcome has no known time: while one of its endpoints waits for its probe, any max wait left is enough.
 */
export function waitsFor(
  sel: Extract<Selection, { kind: 'wait' }>,
  now: number,
  request: TokenRequest,
): boolean {
  const left = waitLeft(request);
  return sel.until - now <= left || (sel.probing === true && left > 0);
}

export function beyondMaxWait(
  sel: Extract<Selection, { kind: 'wait' }>,
  now: number,
  request: TokenRequest,
): string {
  const { maxWaitMs, cooledMs } = request;
  const spent = cooledMs ? `, ${Math.round(cooledMs)} ms of it already spent cooling` : '';
  const probe = sel.probing ? '; a breaker of the chain waits for its probe' : '';
  return `every endpoint of chain "${request.chain}" is unavailable beyond max wait ${maxWaitMs} ms${spent} (earliest: ${sel.endpointId}, ${sel.cause}, in ${Math.round(sel.until - now)} ms${probe})`;
}
