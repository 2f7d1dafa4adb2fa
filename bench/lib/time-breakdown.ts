import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { RoundTail } from './agent-rounds.ts';
import { round } from './stats.ts';

/**
 * Where breakwater's makespan went, from its own event log: how busy the concurrency tokens were (Σ call
 * time ÷ tokens × makespan), the observed call latency per endpoint, why agents waited, and each round's span.
 */
export function timeBreakdown(events: readonly RuntimeEvent[], makespanMs: number, tokens: number) {
  const calls = events.filter(
    (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> => e.type === 'call.attempt',
  );
  const busyMs = calls.reduce((n, c) => n + c.data.latencyMs, 0);
  const faultMs = calls.filter((c) => c.data.outcome === 'fault').reduce((n, c) => n + c.data.latencyMs, 0);
  const byEndpoint: Record<string, { calls: number; meanLatencyMs: number; faults: number }> = {};
  for (const c of calls) {
    byEndpoint[c.endpoint ?? '?'] ??= { calls: 0, meanLatencyMs: 0, faults: 0 };
    const e = byEndpoint[c.endpoint ?? '?']!;
    e.meanLatencyMs += c.data.latencyMs;
    e.calls++;
    if (c.data.outcome === 'fault') e.faults++;
  }
  for (const e of Object.values(byEndpoint)) e.meanLatencyMs = Math.round(e.meanLatencyMs / e.calls);
  // Lease time: grant → release. What a token is held for beyond the upstream call is the runtime's own
  // time inside a lease (result bookkeeping, the durable memo write, actor hops), in simulated ms.
  const granted = new Map<string, number>();
  let leaseMs = 0;
  let leases = 0;
  for (const e of events) {
    if (e.type === 'token.granted') granted.set(e.data.leaseId, e.at);
    if (e.type === 'token.released') {
      const at = granted.get(e.data.leaseId);
      if (at !== undefined) {
        leaseMs += e.at - at;
        leases++;
      }
    }
  }
  // Share of the makespan spent with k tokens held (k = 0 … tokens; HALF-OPEN probes hold one too).
  const held: number[] = Array.from({ length: tokens + 2 }, () => 0);
  const active = new Set<string>();
  let last = events.find((e) => e.type === 'run.started')?.at ?? 0;
  for (const e of events) {
    if (e.type !== 'token.granted' && e.type !== 'token.released' && e.type !== 'probe.started') continue;
    held[Math.min(active.size, tokens + 1)]! += e.at - last;
    last = e.at;
    if (e.type === 'token.released') active.delete(e.data.leaseId);
    else active.add(e.data.leaseId);
  }
  const heldShare = Object.fromEntries(held.map((ms, k) => [String(k), round(ms / makespanMs)]));
  const underused = underusedTime(events, tokens);
  const underusedShareByCause = Object.fromEntries(
    Object.entries(underused).map(([cause, ms]) => [cause, round(ms / makespanMs)]),
  );
  const waits: Record<string, number> = {};
  for (const e of events) if (e.type === 'token.wait') waits[e.data.cause] = (waits[e.data.cause] ?? 0) + 1;
  const denied = events.filter((e) => e.type === 'token.denied').length;
  const starts = new Map<number, number>();
  const rounds: { round: number; spanMs: number; lastTurnByAgentMs: Record<string, number> }[] = [];
  const lastTurn = new Map<number, Record<string, number>>();
  for (const e of events) {
    if (e.type === 'round.started') starts.set(e.data.round, e.at);
    if (e.type === 'turn.completed' && e.data.round !== undefined && e.agent) {
      const byAgent = lastTurn.get(e.data.round) ?? {};
      byAgent[e.agent] = Math.round(e.at - (starts.get(e.data.round) ?? e.at));
      lastTurn.set(e.data.round, byAgent);
    }
    if (e.type === 'round.committed')
      rounds.push({
        round: e.data.round,
        spanMs: Math.round(e.at - (starts.get(e.data.round) ?? e.at)),
        // When each agent finished its last turn of the round: the spread is the round's tail.
        lastTurnByAgentMs: lastTurn.get(e.data.round) ?? {},
      });
  }
  return {
    tokens,
    tokenUtilization: round(busyMs / (tokens * makespanMs)),
    tokensHeldShare: round(leaseMs / (tokens * makespanMs)),
    meanLeaseMs: Math.round(leaseMs / Math.max(1, leases)),
    shareOfMakespanWithTokensHeld: heldShare,
    // Why fewer tokens were held than there are: what the agents were doing meanwhile (shares of the makespan).
    underusedShareByCause,
    meanHeldBeyondCallMs: Math.round((leaseMs - busyMs) / Math.max(1, leases)),
    callTimeMs: Math.round(busyMs),
    faultedCallTimeMs: Math.round(faultMs),
    meanCallLatencyMs: Math.round(busyMs / Math.max(1, calls.length)),
    byEndpoint,
    tokenWaitsByCause: waits,
    tokenDenials: denied,
    rounds,
  };
}

/**
 * The time fewer tokens were held than available, by why: some agent queued (its endpoints paced, at their
 * concurrency cap or AIMD limit: parked in the scheduler), else some agent cooling (every usable endpoint in
 * cooldown / open / disabled), else some agent running tools (no token needed), else no demand (every agent with
 * work left is done: the end of a round, before its commit). In simulated ms.
 */
function underusedTime(events: readonly RuntimeEvent[], tokens: number): Record<string, number> {
  const states = new Map<string, string>();
  const leases = new Set<string>();
  const out: Record<string, number> = {
    'queued: endpoints paced, at their cap or AIMD limit': 0,
    'cooling: every usable endpoint cooling': 0,
    'tools: agents running tools (no token)': 0,
    'no demand: round tail or commit': 0,
  };
  let last = events.find((e) => e.type === 'run.started')?.at ?? 0;
  for (const e of events) {
    if (leases.size < tokens && e.at > last) {
      const values = [...states.values()];
      const key = values.includes('queued')
        ? 'queued: endpoints paced, at their cap or AIMD limit'
        : values.includes('cooling')
          ? 'cooling: every usable endpoint cooling'
          : values.includes('tools')
            ? 'tools: agents running tools (no token)'
            : 'no demand: round tail or commit';
      out[key]! += (e.at - last) * ((tokens - leases.size) / tokens);
    }
    last = Math.max(last, e.at);
    if (e.type === 'agent.state' && e.agent) states.set(e.agent, e.data.state);
    if (e.type === 'token.granted' || e.type === 'probe.started') leases.add(e.data.leaseId);
    if (e.type === 'token.released') leases.delete(e.data.leaseId);
  }
  return out;
}

/**
 * Each round's tail from a run's events: simulated ms from `round.started` to the last `turn.completed` of each
 * tier (the tier the turn was asked under), and to the round's commit.
 */
export function roundTailsOf(events: readonly RuntimeEvent[]): RoundTail[] {
  const starts = new Map<number, number>();
  const done = new Map<number, Record<string, number>>();
  const out: RoundTail[] = [];
  for (const e of events) {
    if (e.type === 'round.started') starts.set(e.data.round, e.at);
    if (e.type === 'turn.completed' && e.data.round !== undefined) {
      const byTier = done.get(e.data.round) ?? {};
      const ms = e.at - (starts.get(e.data.round) ?? e.at);
      byTier[e.data.tier] = Math.max(byTier[e.data.tier] ?? 0, ms);
      done.set(e.data.round, byTier);
    }
    if (e.type === 'round.committed')
      out.push({
        round: e.data.round,
        spanMs: Math.round(e.at - (starts.get(e.data.round) ?? e.at)),
        doneByTierMs: done.get(e.data.round) ?? {},
      });
  }
  return out;
}
