import { type AnyActorLogic, type AnyActorRef, assign, enqueueActions, setup, stopChild } from 'xstate';
import type { Clock } from '../src/clock/clock.ts';
import type { RetryBudget } from '../src/resilience/retry-budget.ts';
import type { EnginePool, PoolOutcome } from '../src/runtime/engine-pool.ts';
import {
  agentMachine,
  type AgentInput,
  type AgentToSupervisorEvent,
  type CallOutcome,
} from './agent.machine.ts';

/** Bumped whenever the supervisor's context or states change. */
export const SUPERVISOR_MACHINE_VERSION = 'supervisor@1';

/** A granted concurrency token. */
export interface Lease {
  readonly leaseId: string;
  /** Agent name, or `probe:<endpoint>` for a HALF-OPEN health probe. */
  readonly holder: string;
  readonly endpointId: string;
  readonly tier: string;
  readonly grantedAt: number;
  /** Taken back at this time if not released (a stuck or stopped holder). */
  readonly leaseUntil: number;
  readonly estimatedTokens: number;
}

/** A request waiting for a token. */
export interface QueuedRequest {
  readonly agent: string;
  readonly tier: string;
  readonly tierRank: number;
  readonly chain: string;
  readonly retry: boolean;
  readonly attempt: number;
  readonly maxWaitMs: number;
  readonly estimatedTokens: number;
  readonly enqueuedAt: number;
  readonly seq: number;
}

export interface SupervisorContext {
  /** Global concurrency tokens. */
  readonly limit: number;
  readonly leases: Readonly<Record<string, Lease>>;
  /** Sorted: tier rank, then arrival (FIFO inside a tier). */
  readonly queue: readonly QueuedRequest[];
  readonly seq: number;
}

/** A decision or a state change the supervisor reports to the event log / visualizer. */
export type SupervisorReport =
  | {
      type: 'token.granted';
      at: number;
      agent: string;
      endpointId: string;
      leaseId: string;
      waitedMs: number;
      held: number;
    }
  | { type: 'token.released'; at: number; agent: string; endpointId: string; leaseId: string; held: number }
  | { type: 'token.reclaimed'; at: number; holder: string; endpointId: string; leaseId: string }
  | { type: 'token.wait'; at: number; agent: string; endpointId: string; until: number; cause: string }
  | { type: 'token.denied'; at: number; agent: string; reason: string }
  | { type: 'probe.started'; at: number; endpointId: string; leaseId: string };

export type SupervisorEvent =
  | AgentToSupervisorEvent
  | { type: 'AGENT.SPAWN'; name: string; input: AgentInput }
  | { type: 'AGENT.STOP'; name: string }
  | { type: 'PROBE.DONE'; leaseId: string }
  | { type: 'LIMIT.SET'; limit: number }
  | { type: 'SCAN' };

/** What the supervisor needs from the runtime. */
export interface SupervisorDeps {
  readonly pool: EnginePool;
  readonly clock: Clock;
  readonly budget: RetryBudget;
  readonly tiers: readonly string[];
  readonly limit: number;
  readonly leaseMs: number;
  /** Starts a HALF-OPEN probe holding `leaseId`; must send `PROBE.DONE` when it ends. */
  readonly startProbe: (endpointId: string, leaseId: string) => void;
  /** Session-bound endpoints (BYOK keys) an agent may use after its chain. Default none. */
  readonly extraEndpoints?: (agent: string) => readonly string[];
  readonly report?: (r: SupervisorReport) => void;
}

const agentRef = (system: { get(id: string): AnyActorRef | undefined }, name: string) =>
  system.get(`agent:${name}`);

function toPoolOutcome(o: CallOutcome): PoolOutcome {
  return o.ok ? { kind: 'success', result: o.result } : { kind: 'fault', fault: o.fault };
}

/**
 * Builds the supervisor machine: one per runtime. It holds the global concurrency tokens, grants them in
 * tier order (FIFO inside a tier) together with the endpoint to call, takes back tokens whose holder
 * stopped or overran its lease, charges retries to the retry budget, sends HALF-OPEN probes, and owns
 * the engine pool's shared health. Agents are its children (`spawnChild('agent')`, system id
 * `agent:<name>`); it talks to them by id, never by a stored ref.
 *
 * @example
 * ```ts
 * const machine = createSupervisorMachine(deps).provide({ actors: { agent: providedAgentLogic } });
 * const actor = createActor(machine, { systemId: 'supervisor', clock }).start();
 * ```
 */
export function createSupervisorMachine(deps: SupervisorDeps) {
  const { pool, clock, budget } = deps;
  /** Takes a token back from a holder that stopped or overran its lease. */
  const reclaim = (lease: Lease, now: number) => {
    pool.release(lease.endpointId, { kind: 'reclaimed' }, 0, now);
    deps.report?.({
      type: 'token.reclaimed',
      at: now,
      holder: lease.holder,
      endpointId: lease.endpointId,
      leaseId: lease.leaseId,
    });
  };
  const rank = (tier: string) => {
    const i = deps.tiers.indexOf(tier);
    return i < 0 ? deps.tiers.length : i;
  };

  return setup({
    types: { context: {} as SupervisorContext, events: {} as SupervisorEvent },
    actors: { agent: agentMachine as AnyActorLogic },
    actions: {
      enqueueRequest: assign(({ context, event }) => {
        if (event.type !== 'TOKEN.REQUEST') return {};
        const others = context.queue.filter((q) => q.agent !== event.agent);
        const req: QueuedRequest = {
          agent: event.agent,
          tier: event.tier,
          tierRank: rank(event.tier),
          chain: event.chain,
          retry: event.retry,
          attempt: event.attempt,
          maxWaitMs: event.maxWaitMs,
          estimatedTokens: event.estimatedTokens,
          enqueuedAt: clock.now(),
          seq: context.seq + 1,
        };
        let i = others.length;
        while (i > 0 && others[i - 1]!.tierRank > req.tierRank) i--;
        return { queue: [...others.slice(0, i), req, ...others.slice(i)], seq: context.seq + 1 };
      }),
      withdraw: assign(({ context, event }) => {
        const name =
          event.type === 'TOKEN.WITHDRAW' ? event.agent : event.type === 'AGENT.STOP' ? event.name : '';
        return { queue: context.queue.filter((q) => q.agent !== name) };
      }),
      releaseLease: assign(({ context, event }) => {
        if (event.type !== 'TOKEN.RELEASE' && event.type !== 'PROBE.DONE') return {};
        const lease = context.leases[event.leaseId];
        if (!lease) return {};
        const now = clock.now();
        if (event.type === 'TOKEN.RELEASE')
          pool.release(lease.endpointId, toPoolOutcome(event.outcome), event.reservedTokens, now);
        const { [event.leaseId]: _gone, ...leases } = context.leases;
        deps.report?.({
          type: 'token.released',
          at: now,
          agent: lease.holder,
          endpointId: lease.endpointId,
          leaseId: lease.leaseId,
          held: Object.keys(leases).length,
        });
        return { leases };
      }),
      reclaimAgent: assign(({ context, event }) => {
        if (event.type !== 'AGENT.STOP') return {};
        const now = clock.now();
        const leases: Record<string, Lease> = {};
        for (const [id, l] of Object.entries(context.leases)) {
          if (l.holder === event.name) reclaim(l, now);
          else leases[id] = l;
        }
        return { leases };
      }),
      spawnAgent: enqueueActions(({ event, enqueue }) => {
        if (event.type !== 'AGENT.SPAWN') return;
        enqueue.spawnChild('agent', { id: event.name, systemId: `agent:${event.name}`, input: event.input });
      }),
      stopAgent: stopChild(({ event }) => (event.type === 'AGENT.STOP' ? event.name : '')),
      setLimit: assign(({ event }) =>
        event.type === 'LIMIT.SET' ? { limit: Math.max(1, event.limit) } : {},
      ),
      answerHealth: enqueueActions(({ event, enqueue, system }) => {
        if (event.type !== 'HEALTH.CHECK') return;
        const now = clock.now();
        const healthy = pool.chainHealthy(event.chain, now, deps.extraEndpoints?.(event.agent) ?? []);
        const ref = agentRef(system, event.agent);
        if (ref) enqueue.sendTo(ref, { type: 'HEALTH.STATUS', healthy, at: now });
      }),
      schedule: enqueueActions(({ context, event, enqueue, system }) => {
        const now = clock.now();
        // With every token held, waiting requests cannot be granted; only a newcomer is looked at (it may have to
        // cool or degrade at once). The rest are looked at again when a token comes back or at the next scan.
        const newcomer = event.type === 'TOKEN.REQUEST' ? event.agent : undefined;
        const leases: Record<string, Lease> = { ...context.leases };
        let held = 0;
        let nextScan = Number.POSITIVE_INFINITY;
        for (const [id, l] of Object.entries(leases)) {
          if (l.leaseUntil <= now) {
            delete leases[id];
            reclaim(l, now);
          } else {
            held++;
            nextScan = Math.min(nextScan, l.leaseUntil);
          }
        }
        let seq = context.seq;
        // HALF-OPEN probes first: they are tiny and bring whole endpoints back.
        for (const endpointId of pool.pendingProbes(now)) {
          if (held >= context.limit) break;
          const leaseId = `probe-${++seq}`;
          leases[leaseId] = {
            leaseId,
            holder: `probe:${endpointId}`,
            endpointId,
            tier: 'probe',
            grantedAt: now,
            leaseUntil: now + deps.leaseMs,
            estimatedTokens: 0,
          };
          held++;
          deps.report?.({ type: 'probe.started', at: now, endpointId, leaseId });
          enqueue(() => deps.startProbe(endpointId, leaseId));
        }
        const queue: QueuedRequest[] = [];
        for (const r of context.queue) {
          if (held >= context.limit && r.agent !== newcomer) {
            queue.push(r);
            continue;
          }
          const ref = agentRef(system, r.agent);
          if (!ref) continue;
          const sel = pool.select(r.chain, now, r.estimatedTokens, deps.extraEndpoints?.(r.agent) ?? []);
          if (sel.kind === 'none') {
            deps.report?.({ type: 'token.denied', at: now, agent: r.agent, reason: sel.reason });
            enqueue.sendTo(ref, { type: 'TOKEN.DENIED', reason: sel.reason, at: now });
            continue;
          }
          if (sel.kind === 'wait') {
            if (sel.until - now > r.maxWaitMs) {
              const reason = `every endpoint of chain "${r.chain}" is unavailable beyond max wait ${r.maxWaitMs} ms (earliest: ${sel.endpointId}, ${sel.cause}, in ${Math.round(sel.until - now)} ms)`;
              deps.report?.({ type: 'token.denied', at: now, agent: r.agent, reason });
              enqueue.sendTo(ref, { type: 'TOKEN.DENIED', reason, at: now });
            } else if (sel.cause === 'pacing' || sel.cause === 'concurrency') {
              queue.push(r);
              if (sel.until > now) nextScan = Math.min(nextScan, sel.until);
            } else {
              deps.report?.({
                type: 'token.wait',
                at: now,
                agent: r.agent,
                endpointId: sel.endpointId,
                until: sel.until,
                cause: sel.cause,
              });
              enqueue.sendTo(ref, {
                type: 'TOKEN.WAIT',
                until: sel.until,
                endpointId: sel.endpointId,
                at: now,
              });
            }
            continue;
          }
          if (held >= context.limit) {
            queue.push(r);
            continue;
          }
          // A retry is charged when it is actually sent: a storm cannot multiply upstream traffic.
          if (r.retry && !budget.tryRetry(now)) {
            const reason =
              'retry budget spent: too many retries in the last window; answering degraded instead';
            deps.report?.({ type: 'token.denied', at: now, agent: r.agent, reason });
            enqueue.sendTo(ref, { type: 'TOKEN.DENIED', reason, at: now });
            continue;
          }
          if (r.attempt === 0) budget.recordCall(now);
          const leaseId = `lease-${++seq}`;
          pool.acquire(sel.endpointId, r.estimatedTokens, now);
          leases[leaseId] = {
            leaseId,
            holder: r.agent,
            endpointId: sel.endpointId,
            tier: r.tier,
            grantedAt: now,
            leaseUntil: now + deps.leaseMs,
            estimatedTokens: r.estimatedTokens,
          };
          held++;
          nextScan = Math.min(nextScan, now + deps.leaseMs);
          deps.report?.({
            type: 'token.granted',
            at: now,
            agent: r.agent,
            endpointId: sel.endpointId,
            leaseId,
            waitedMs: now - r.enqueuedAt,
            held,
          });
          enqueue.sendTo(ref, {
            type: 'TOKEN.GRANTED',
            leaseId,
            endpointId: sel.endpointId,
            index: sel.index,
            at: now,
          });
        }
        const breakerAt = pool.nextBreakerDeadline();
        if (breakerAt !== undefined) nextScan = Math.min(nextScan, Math.max(breakerAt, now));
        enqueue.assign({ leases, queue, seq });
        enqueue.cancel('scan');
        if (Number.isFinite(nextScan))
          enqueue.raise({ type: 'SCAN' }, { id: 'scan', delay: Math.max(0, nextScan - now) });
      }),
    },
  }).createMachine({
    id: 'supervisor',
    context: { limit: deps.limit, leases: {}, queue: [], seq: 0 },
    on: {
      'AGENT.SPAWN': { actions: 'spawnAgent' },
      'AGENT.STOP': { actions: ['withdraw', 'reclaimAgent', 'stopAgent', 'schedule'] },
      'TOKEN.REQUEST': { actions: ['enqueueRequest', 'schedule'] },
      'TOKEN.RELEASE': { actions: ['releaseLease', 'schedule'] },
      'TOKEN.WITHDRAW': { actions: ['withdraw', 'schedule'] },
      'PROBE.DONE': { actions: ['releaseLease', 'schedule'] },
      'HEALTH.CHECK': { actions: 'answerHealth' },
      'LIMIT.SET': { actions: ['setLimit', 'schedule'] },
      SCAN: { actions: 'schedule' },
    },
  });
}
