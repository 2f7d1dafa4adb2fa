import type { FaultKind } from './fault.ts';
import type { Usage } from './engine-types.ts';

/**
 * Everything that happens in a run, as plain data: the event log the report and the state visualizer
 * read. One row per event in the `events` table (`seq`, `at`, `type`, `agent`, `endpoint`, `data`).
 * `at` is on the run's clock (simulated time in a time-scaled scenario).
 *
 * @example
 * ```ts
 * supervisor.subscribeEvents((e: RuntimeEvent) => { if (e.type === 'breaker.state') console.log(e.endpoint, e.data); });
 * ```
 */
export type RuntimeEvent =
  | Ev<
      'run.started',
      {
        runId: string;
        scenario: string;
        rounds: number;
        agents: readonly AgentInfo[];
        endpoints: readonly string[];
        resumedFrom?: number;
      }
    >
  | Ev<'run.finished', { runId: string; status: string }>
  | Ev<'round.started', { round: number }>
  | Ev<'round.committed', { round: number; turns: number }>
  /** An agent's top-level state changed (idle, queued, calling, fallback, tools, cooling, degraded, stopped). */
  /** `worker`: the worker process that ran the agent, in a run spread over workers (`host:pid:nonce`). */
  | Ev<'agent.state', { state: string; previous: string; worker?: string }, 'agent'>
  /**
   * One upstream attempt (one line of the call log). `startedAt` + `latencyMs` give its interval. An
   * agent's attempt names its `agent`; a breaker's HALF-OPEN probe (`probe: true`) has none.
   */
  | Ev<
      'call.attempt',
      {
        tier: string;
        outcome: 'ok' | 'fault';
        startedAt: number;
        latencyMs: number;
        provider: string;
        model: string;
        /** The model the request named, when the answer came from another (a dated version, say). */
        requestModel?: string;
        faultKind?: FaultKind;
        status?: number;
        retryAfterMs?: number;
        /** The Retry-After the provider gave, when the endpoint's `maxRetryAfterMs` cut it. */
        retryAfterCappedFromMs?: number;
        /** On success: the longest rate-limit reset the headers asked for, when `maxRetryAfterMs` cut it. */
        resetCappedFromMs?: number;
        memoized?: boolean;
        /** A HALF-OPEN health probe: an upstream call no agent asked for (no `agent`). */
        probe?: boolean;
        /**
         * On success: the call's tokens as the provider reported them (`null`: not reported, the estimate apart). On a
         * fault: present when the call was cut after it was sent (unknown, the estimate apart); a call refused with
         * an HTTP status used nothing. Absent from events stored before it was recorded.
         */
        usage?: Usage;
      },
      'endpoint'
    >
  | Ev<
      'token.granted',
      // `tier` is absent from events stored before it was recorded.
      { leaseId: string; waitedMs: number; held: number; tier?: string },
      'agent' | 'endpoint'
    >
  | Ev<'token.released', { leaseId: string; held: number }, 'agent' | 'endpoint'>
  | Ev<'token.reclaimed', { leaseId: string; holder: string }, 'endpoint'>
  | Ev<'token.wait', { until: number; cause: string }, 'agent' | 'endpoint'>
  | Ev<'token.denied', { reason: string }, 'agent'>
  /**
   * Wait or switch: the agent waits for `endpoint` (paced or cooling until `until`) rather than take `insteadOf`, a
   * later endpoint of its chain that is ready, because the wait plus `endpoint`'s usual latency (`expectedMs`) is
   * shorter than `insteadOf`'s usual latency (`insteadExpectedMs`).
   */
  | Ev<
      'route.wait',
      { until: number; insteadOf: string; expectedMs: number; insteadExpectedMs: number },
      'agent' | 'endpoint'
    >
  | Ev<'probe.started', { leaseId: string }, 'endpoint'>
  /** An endpoint's breaker changed state (closed, open, halfOpen). */
  | Ev<'breaker.state', { state: string; previous: string; openUntil: number | null }, 'endpoint'>
  | Ev<
      'turn.completed',
      {
        turnId: string;
        tier: string;
        round?: number;
        itemId?: string;
        outcome: string;
        degraded: boolean;
        degradedReason?: string;
        waitMs: number;
        attempts: number;
        faults: readonly FaultKind[];
        startedAt: number;
        /** The worker process that asked the turn, in a run spread over workers (`host:pid:nonce`). */
        worker?: string;
      },
      'agent'
    >
  /** A line a policy writes that the report counts (e.g. "all candidate models are cooling down"). */
  | Ev<'policy.log', { message: string; tier?: string }, 'agent'>
  /** A user's own key (`/byok`) became a session-bound endpoint. `masked` is `sk-…a1b2`, never the key. */
  | Ev<
      'byok.injected',
      { sessionId: string; provider: string; masked: string; expiresAt: number },
      'endpoint'
    >
  /**
   * A BYOK key is gone and its endpoint removed: `idle` (TTL), `revoked` (by the API, or because the provider
   * refused it: then `faultKind` says why), `session-ended`, `replaced`, `closed` (runtime stopped).
   */
  | Ev<
      'byok.expired',
      { sessionId: string; provider: string; masked: string; reason: string; faultKind?: FaultKind },
      'endpoint'
    >;

/** What the run knows about an agent, for the report and the visualizer. */
export interface AgentInfo {
  readonly name: string;
  readonly tier: string;
  readonly chain?: string;
  readonly noAgent?: boolean;
}

type Ev<T extends string, D, K extends 'agent' | 'endpoint' | never = never> = {
  readonly type: T;
  readonly at: number;
  readonly data: D;
} & { readonly [P in K]: string } & { readonly agent?: string; readonly endpoint?: string };

/**
 * Every event type name.
 *
 * @example
 * ```ts
 * const wanted: RuntimeEventType[] = ['turn.completed', 'call.attempt'];
 * ```
 */
export type RuntimeEventType = RuntimeEvent['type'];

/**
 * A sink for runtime events.
 *
 * @example
 * ```ts
 * const listener: RuntimeEventListener = (e) => events.push(e);
 * createSupervisor(config, { onEvent: listener });
 * ```
 */
export type RuntimeEventListener = (event: RuntimeEvent) => void;
