import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { SchedulerReport } from '../scheduler/token-scheduler.ts';
import type { CallRecordEvent } from './agent-actors.ts';
import type { TurnMeta } from './agent-handle.ts';
import type { Turn } from '../core/turn.ts';

/*
 * The runtime's records as `RuntimeEvent`s: the one feed behind the event log, the report, the live view and the
 * visualizer.
 */

/** One upstream attempt (an agent's call or a HALF-OPEN probe) as a `call.attempt` event. */
export function callEvent(c: CallRecordEvent): RuntimeEvent {
  return {
    type: 'call.attempt',
    at: c.at,
    ...(c.agent !== undefined ? { agent: c.agent } : {}),
    endpoint: c.endpointId,
    data: {
      tier: c.tier,
      outcome: c.outcome,
      startedAt: c.startedAt,
      latencyMs: c.at - c.startedAt,
      provider: c.provider,
      model: c.model,
      ...(c.requestModel !== undefined && c.requestModel !== c.model ? { requestModel: c.requestModel } : {}),
      ...(c.probe ? { probe: true } : {}),
      ...(c.fault
        ? {
            faultKind: c.fault.kind,
            ...(c.fault.status !== undefined ? { status: c.fault.status } : {}),
            ...(c.fault.retryAfterMs !== undefined ? { retryAfterMs: c.fault.retryAfterMs } : {}),
            // The provider asked for longer; the endpoint's maxRetryAfterMs cut it (shown, not hidden).
            ...(c.fault.retryAfterCappedFromMs !== undefined
              ? { retryAfterCappedFromMs: c.fault.retryAfterCappedFromMs }
              : {}),
            // A call cut after it was sent: its usage is unknown (the estimate apart), and counted so.
            ...(c.usage ? { usage: c.usage } : {}),
          }
        : {
            status: 200,
            ...(c.resetCappedFromMs !== undefined ? { resetCappedFromMs: c.resetCappedFromMs } : {}),
            ...(c.usage ? { usage: c.usage } : {}),
          }),
    },
  };
}

/** A finished turn as a `turn.completed` event. */
export function turnEvent(turn: Turn, meta: TurnMeta | undefined): RuntimeEvent {
  return {
    type: 'turn.completed',
    at: turn.finishedAt,
    agent: turn.agent,
    ...(turn.endpointId ? { endpoint: turn.endpointId } : {}),
    data: {
      turnId: turn.turnId,
      tier: turn.tier,
      ...(meta?.round !== undefined ? { round: meta.round } : {}),
      ...(meta?.itemId !== undefined ? { itemId: meta.itemId } : {}),
      outcome: turn.outcome,
      degraded: turn.degraded,
      ...(turn.degradedReason ? { degradedReason: turn.degradedReason } : {}),
      waitMs: turn.waitMs,
      attempts: turn.attempts,
      faults: turn.faults.map((f) => f.kind),
      startedAt: turn.startedAt,
    },
  };
}

/** A scheduler decision as its event. */
export function reportToEvent(r: SchedulerReport): RuntimeEvent {
  switch (r.type) {
    case 'token.granted':
      return {
        type: r.type,
        at: r.at,
        agent: r.agent,
        endpoint: r.endpointId,
        data: { leaseId: r.leaseId, waitedMs: r.waitedMs, held: r.held, tier: r.tier },
      };
    case 'token.released':
      return {
        type: r.type,
        at: r.at,
        agent: r.agent,
        endpoint: r.endpointId,
        data: { leaseId: r.leaseId, held: r.held },
      };
    case 'token.reclaimed':
      return {
        type: r.type,
        at: r.at,
        endpoint: r.endpointId,
        data: { leaseId: r.leaseId, holder: r.holder },
      };
    case 'token.wait':
      return {
        type: r.type,
        at: r.at,
        agent: r.agent,
        endpoint: r.endpointId,
        data: { until: r.until, cause: r.cause },
      };
    case 'token.denied':
      return { type: r.type, at: r.at, agent: r.agent, data: { reason: r.reason } };
    case 'route.wait': {
      const { until, insteadOf, expectedMs, insteadExpectedMs } = r;
      const data = { until, insteadOf, expectedMs, insteadExpectedMs };
      return { type: r.type, at: r.at, agent: r.agent, endpoint: r.endpointId, data };
    }
    case 'probe.started':
      return { type: r.type, at: r.at, endpoint: r.endpointId, data: { leaseId: r.leaseId } };
  }
}
