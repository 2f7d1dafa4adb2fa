/**
 * A token scheduler on its own (no supervisor, no agents): the real endpoint registry with its health, the real
 * timer heap and retry budget, on a manual clock. Engines are never called by the scheduler, so each endpoint's
 * engine is a stub that refuses to be called.
 */
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import type { ParsedEndpointConfig } from '../../src/engines/endpoint-config.ts';
import { describeEndpoint } from '../../src/engines/endpoint-config.ts';
import type { EngineResult } from '../../src/core/engine-types.ts';
import type { Fault, FaultKind } from '../../src/core/fault.ts';
import { EndpointRegistry, type SelectOptions, type Selection } from '../../src/health/endpoint-registry.ts';
import { RetryBudget } from '../../src/resilience/retry-budget.ts';
import { MemoryTokenScheduler } from '../../src/scheduler/memory-token-scheduler.ts';
import { TimerHeap } from '../../src/clock/timer-heap.ts';
import type { SchedulerReport, TokenRequest } from '../../src/scheduler/token-scheduler.ts';

export const T0 = Date.parse('2026-08-17T07:00:00+09:00');

/** An endpoint config; `limits` as in a real config. */
export function endpoint(
  id: string,
  limits: ParsedEndpointConfig['limits'] = undefined,
): ParsedEndpointConfig {
  return {
    id,
    provider: 'openai',
    model: 'gpt-4o-mini',
    apiKey: `sk-test-${id}-0000000000`,
    baseURL: 'http://127.0.0.1:9/v1',
    ...(limits ? { limits } : {}),
  } as ParsedEndpointConfig;
}

/** Counts every chain selection: the scheduler's unit of work per look at a waiter. */
export class CountingRegistry extends EndpointRegistry {
  selects = 0;
  override select(
    ids: readonly string[],
    now: number,
    tokens: number,
    skip?: readonly string[],
    options?: SelectOptions,
  ): Selection {
    this.selects++;
    return super.select(ids, now, tokens, skip, options);
  }
}

export interface Fixture {
  readonly clock: ManualClock;
  readonly timers: TimerHeap;
  readonly endpoints: CountingRegistry;
  readonly scheduler: MemoryTokenScheduler;
  readonly reports: SchedulerReport[];
  readonly budget: RetryBudget;
}

export interface FixtureOptions {
  readonly endpoints: readonly ParsedEndpointConfig[];
  readonly chains: Readonly<Record<string, readonly string[]>>;
  readonly limit?: number;
  readonly leaseMs?: number;
  readonly reclaimGraceMs?: number;
  readonly budget?: RetryBudget;
  readonly tiers?: readonly string[];
  readonly tierAgingMs?: number;
  readonly tierSlackMs?: number;
}

export function fixture(o: FixtureOptions): Fixture {
  const clock = createManualClock(T0);
  const timers = new TimerHeap(clock);
  const endpoints = new CountingRegistry(o.endpoints, o.chains, {
    timers,
    createEngine: (c) => ({
      endpoint: describeEndpoint(c),
      call: async () => {
        throw new Error('the scheduler never calls an engine');
      },
    }),
    settings: {
      breaker: {},
      baseBackoffMs: 500,
      maxBackoffMs: 30_000,
      creditCooldownMs: 3_600_000,
      adaptive: false,
      defaultConcurrency: o.limit ?? 3,
    },
    random: () => 0.5,
    hooks: { onReadinessChange: (id) => scheduler.wake(id) },
  });
  const reports: SchedulerReport[] = [];
  const budget = o.budget ?? new RetryBudget();
  const scheduler: MemoryTokenScheduler = new MemoryTokenScheduler({
    clock,
    timers,
    endpoints,
    limit: o.limit ?? 1,
    tiers: o.tiers ?? ['analysis', 'ops'],
    ...(o.tierAgingMs !== undefined ? { tierAgingMs: o.tierAgingMs } : {}),
    ...(o.tierSlackMs !== undefined ? { tierSlackMs: o.tierSlackMs } : {}),
    leaseMs: o.leaseMs ?? 120_000,
    reclaimGraceMs: o.reclaimGraceMs ?? 5_000,
    budget,
    onReport: (r) => reports.push(r),
  });
  return { clock, timers, endpoints, scheduler, reports, budget };
}

export function request(holder: string, chain: string, extra: Partial<TokenRequest> = {}): TokenRequest {
  return {
    holder,
    tier: 'ops',
    chain,
    estimatedTokens: 100,
    maxWaitMs: 600_000,
    retry: false,
    attempt: 0,
    ...extra,
  };
}

export function success(
  endpointId: string,
  rateLimit: EngineResult['rateLimit'] = {},
): {
  kind: 'success';
  result: EngineResult;
} {
  return {
    kind: 'success',
    result: {
      text: 'ok',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: { inputTokens: 60, outputTokens: 10, source: 'reported' },
      endpoint: describeEndpoint(endpoint(endpointId)),
      model: 'gpt-4o-mini',
      rateLimit,
      latencyMs: 5,
    },
  };
}

export function fault(kind: FaultKind, extra: Partial<Fault> = {}): { kind: 'fault'; fault: Fault } {
  return { kind: 'fault', fault: { kind, provider: 'openai', message: `${kind} upstream`, ...extra } };
}

/** Lets settled promises run their continuations (no simulated time passes). */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}
