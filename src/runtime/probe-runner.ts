import { warnCapped } from './capped-wait-warning.ts';
import type { Logger } from 'pino';
import type { Clock } from '../clock/clock.ts';
import { type Fault, isEngineFaultError } from '../core/fault.ts';
import type { CallSettlement } from '../health/endpoint-health.ts';
import type { EndpointRegistry, RegisteredEndpoint } from '../health/endpoint-registry.ts';
import { LeaseExpiredError, type TokenScheduler } from '../scheduler/token-scheduler.ts';
import type { CallRecordEvent } from './agent-actors.ts';

/** What {@link createProbeRunner} needs. */
export interface ProbeRunnerDeps {
  readonly endpoints: EndpointRegistry;
  readonly scheduler: TokenScheduler;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Output tokens of a probe. */
  readonly maxTokens: number;
  /** Receives each probe as an upstream attempt (`probe: true`). */
  readonly onCall?: (record: CallRecordEvent) => void;
}

/** Sends HALF-OPEN probes: one at a time per endpoint, each holding a concurrency token like any call. */
export interface ProbeRunner {
  /** The endpoint's breaker wants a probe. Does nothing while one for it is already on its way. */
  request(endpointId: string): void;
  /** Stops asking for tokens; a probe in flight is cancelled through its grant. */
  close(): void;
}

/** After a refused probe token, real ms before the probe runner asks again. */
const PROBE_RETRY_PAUSE_MS = 1_000;

/**
 * The runtime side of HALF-OPEN: when an endpoint's health wants a probe, take a token (probes are served
 * before every tier), send one tiny inference, and report how it went to the endpoint's health and to the
 * call log. Probes are upstream calls: they count against the global cap and show in the report.
 *
 * @example
 * ```ts
 * const probes = createProbeRunner({ endpoints, scheduler, clock, logger, maxTokens: 1 });
 * // wired as the endpoints' `onProbeWanted` hook:
 * probes.request('local-vllm');
 * ```
 */
export function createProbeRunner(deps: ProbeRunnerDeps): ProbeRunner {
  const { endpoints, scheduler, clock } = deps;
  const running = new Set<string>();
  const stopping = new AbortController();
  let seq = 0;

  const run = async (id: string): Promise<void> => {
    let grant: Awaited<ReturnType<TokenScheduler['acquireProbe']>>;
    try {
      grant = await scheduler.acquireProbe(id, stopping.signal);
    } catch {
      if (stopping.signal.aborted) return; // the runtime is stopping
      // Refused (a shared backend down): the breaker still wants a probe and `request` would ask again at once.
      await pauseBeforeNextProbe(stopping.signal);
      return;
    }
    const entry = endpoints.get(id);
    if (!entry?.health.wantsProbe() || stopping.signal.aborted) {
      scheduler.release(grant.leaseId, { kind: 'unused' });
      return;
    }
    // Taken up as an agent takes up its grant: with shared coordination, a lease or a rate permit that ran out
    // while the grant waited is refused here, before anything goes upstream.
    if (!scheduler.claim(grant.leaseId)) {
      scheduler.release(grant.leaseId, { kind: 'unused' });
      await pauseBeforeNextProbe(stopping.signal);
      return;
    }
    const started = clock.now();
    const wallStartedAt = Date.now();
    entry.health.startProbe(started);
    deps.logger.info({ endpoint: id }, 'probe');
    let outcome: ProbeOutcome;
    try {
      const result = await entry.engine.call({
        messages: [{ role: 'user', content: 'ping' }],
        maxTokens: deps.maxTokens,
        idempotencyKey: `probe:${id}:${++seq}`,
        signal: grant.signal,
      });
      outcome = { settlement: { kind: 'success', result }, abandoned: false };
    } catch (e) {
      outcome = failedProbe(e, id, entry, grant.signal, stopping.signal);
    }
    finishProbe(deps, id, entry, grant.leaseId, outcome, started, wallStartedAt);
    if (outcome.abandoned) await pauseBeforeNextProbe(stopping.signal);
  };

  const request = (id: string): void => {
    if (running.has(id) || stopping.signal.aborted) return;
    running.add(id);
    void run(id)
      .catch((e: unknown) => deps.logger.error({ endpoint: id, error: String(e) }, 'probe runner failed'))
      .finally(() => {
        running.delete(id);
        // A good probe that did not close the breaker yet (probesToClose > 1) wants the next one now.
        if (endpoints.get(id)?.health.wantsProbe()) request(id);
      });
  };

  return {
    request,
    close: () => stopping.abort(),
  };
}

/** How a probe that went ended: its settlement, and whether it is abandoned (stopped by us, nothing learned). */
interface ProbeOutcome {
  readonly settlement: Exclude<CallSettlement, { kind: 'unused' }>;
  readonly abandoned: boolean;
}

/**
 * Before the next probe of an endpoint whose probe got no verdict: `request` asks again as soon as a run ends, and
 * without a pause (real time: it waits for a backend or a peer, not for the endpoint) a refusal that repeats would
 * spin without ever yielding to I/O.
 */
function pauseBeforeNextProbe(stopping: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stopping.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, PROBE_RETRY_PAUSE_MS);
    timer.unref?.();
    stopping.addEventListener('abort', done, { once: true });
  });
}

/** The outcome of a probe whose call threw `e`: a fault, or abandoned when we stopped it. */
function failedProbe(
  e: unknown,
  id: string,
  entry: RegisteredEndpoint,
  grantSignal: AbortSignal,
  stopping: AbortSignal,
): ProbeOutcome {
  let fault: Fault = isEngineFaultError(e)
    ? e.fault
    : {
        kind: 'network',
        provider: entry.health.descriptor.provider,
        message: 'probe failed',
        endpointId: id,
      };
  let abandoned = false;
  // Stopped by us? Its lease ran out: the endpoint held the probe for the whole lease, which is what a timeout
  // says (the breaker reopens). Otherwise (the lease fenced, the pool's probe claim lost, the runtime stopping)
  // nothing was learned of the endpoint: the probe is abandoned. A cancellation the endpoint sent itself (an
  // HTTP 499) is its answer: a failed probe like any other fault.
  const ours = grantSignal.aborted || stopping.aborted;
  if (ours && grantSignal.reason instanceof LeaseExpiredError)
    fault = { ...fault, kind: 'timeout', message: 'probe outlived its lease' };
  else if (ours) abandoned = true;
  return { settlement: { kind: 'fault', fault }, abandoned };
}

/** A probe's end: a capped wait said, the verdict to the endpoint's health, the token back, the call reported. */
function finishProbe(
  deps: ProbeRunnerDeps,
  id: string,
  entry: RegisteredEndpoint,
  leaseId: string,
  { settlement, abandoned }: ProbeOutcome,
  started: number,
  wallStartedAt: number,
): void {
  const at = deps.clock.now();
  // A probe's answer is read for its waits like any call's: a capped one is said, as an agent's call says it.
  const cappedFromMs =
    settlement.kind === 'success'
      ? settlement.result.rateLimit.cappedFromMs
      : settlement.fault.retryAfterCappedFromMs;
  if (cappedFromMs !== undefined && !abandoned)
    warnCapped(
      deps.logger,
      { endpoint: id, provider: entry.health.descriptor.provider, tier: 'probe' },
      cappedFromMs,
    );
  entry.health.settleProbe(abandoned ? { kind: 'unused' } : settlement, at);
  deps.scheduler.release(leaseId, settlement);
  deps.onCall?.({
    tier: 'probe',
    endpointId: id,
    provider: entry.health.descriptor.provider,
    model: settlement.kind === 'success' ? settlement.result.model : entry.health.descriptor.model,
    outcome: settlement.kind === 'success' ? 'ok' : 'fault',
    startedAt: started,
    wallStartedAt,
    at,
    ...(settlement.kind === 'fault' ? { fault: settlement.fault } : {}),
    ...(settlement.kind === 'success' && cappedFromMs !== undefined
      ? { resetCappedFromMs: cappedFromMs }
      : {}),
    probe: true,
  });
}
