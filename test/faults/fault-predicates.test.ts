import { describe, expect, it } from 'vitest';
import {
  FAULT_KINDS,
  isCapacityFault,
  isFinalFault,
  isSwappableFault,
  isTransientFault,
  isUnfitFault,
} from '../../src/core/fault.ts';

/*
 * The fault predicates the agent machine and the runtime share (the machine kept its own copies of these sets
 * until they moved into src/core/fault.ts): each names exactly these kinds, over every kind there is.
 */
const kindsWhere = (predicate: (kind: (typeof FAULT_KINDS)[number]) => boolean): string[] =>
  FAULT_KINDS.filter(predicate);

describe('the fault predicates', () => {
  it('capacity: the endpoint has no room for us (a fallback after one is not a retry)', () => {
    expect(kindsWhere(isCapacityFault)).toEqual(['credit_exhausted', 'rate_limited', 'auth']);
  });

  it('final: no engine swap fixes it, and swappable is every other kind', () => {
    expect(kindsWhere(isFinalFault)).toEqual(['bad_request', 'cancelled']);
    for (const kind of FAULT_KINDS) expect(isSwappableFault(kind)).toBe(!isFinalFault(kind));
  });

  it('unfit: the endpoint can never take this request', () => {
    expect(kindsWhere(isUnfitFault)).toEqual(['request_too_large']);
  });

  it('transient: the same endpoint may answer later', () => {
    expect(kindsWhere(isTransientFault)).toEqual([
      'rate_limited',
      'overloaded',
      'server_error',
      'network',
      'timeout',
    ]);
  });
});
