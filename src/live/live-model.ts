import type { AgentInfo, RuntimeEvent } from '../core/runtime-event.ts';
import { formatDuration } from '../clock/format-time.ts';

/**
 * What the live view knows about a run, folded from the runtime event feed (and, when the source has
 * them, the supervisor's health and token views). Plain mutable data owned by one live view.
 */

/**
 * One agent's line.
 *
 * @example
 * ```ts
 * const row: LiveAgent = { name: 'Kai', tier: 'analysis', noAgent: false, state: 'cooling', since: 0, turns: 2, degraded: 0, failed: 0 };
 * ```
 */
export interface LiveAgent {
  readonly name: string;
  tier: string;
  noAgent: boolean;
  /** idle, queued, calling, fallback, tools, cooling, degraded, stopped. */
  state: string;
  /** Run-clock ms of the last state change. */
  since: number;
  /** The endpoint of its last token or call. */
  endpoint?: string;
  /** Until when it waits (cooldown, pacing), run-clock ms. */
  waitUntil?: number;
  turns: number;
  degraded: number;
  failed: number;
  /** A streamed run: the running turn's text so far. */
  text?: string;
  /** A run spread over workers: the worker process that runs it now (`host:pid:nonce`). */
  worker?: string;
}

/**
 * One endpoint's line.
 *
 * @example
 * ```ts
 * const row: LiveEndpoint = { id: 'sonnet', breaker: 'open', openUntil: 30_000, cooldownUntil: 0, disabledUntil: 0, creditOut: false, ok: 3, faults: 3, rateLimited: 3 };
 * ```
 */
export interface LiveEndpoint {
  readonly id: string;
  provider?: string;
  model?: string;
  /** closed, open, halfOpen. */
  breaker: string;
  openUntil: number | null;
  cooldownUntil: number;
  disabledUntil: number;
  disabledReason?: string;
  /** A credit_exhausted fault was seen and no call started after it has succeeded there. */
  creditOut: boolean;
  /** When the last credit_exhausted fault came back, run-clock ms. */
  creditOutAt?: number;
  inFlight?: number;
  ok: number;
  faults: number;
  rateLimited: number;
}

/**
 * Round and item progress, as the round runner reports it.
 *
 * @example
 * ```ts
 * live.setProgress({ round: 1, rounds: 3, done: 12, total: 35 } satisfies LiveProgress);
 * ```
 */
export interface LiveProgress {
  readonly round: number;
  readonly rounds: number;
  /** Turns (or items) finished in this round. */
  readonly done: number;
  readonly total: number;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const rec = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' ? (v as Record<string, unknown>) : {};

/** The run's state for the live view; `apply` returns the plain log lines an event is worth. */
export class LiveModel {
  readonly agents = new Map<string, LiveAgent>();
  readonly endpoints = new Map<string, LiveEndpoint>();
  progress?: LiveProgress;
  /** Set by the view's owner; shown instead of the scenario and run id. */
  title?: string;
  runId?: string;
  scenario?: string;
  tokens?: { limit: number; held: number; queued: number };
  /** Providers with a user's own key in use now (`/byok`), by its endpoint id. */
  readonly byok = new Map<string, string>();

  /** Adds an agent (or updates its tier) without touching its state. */
  addAgent(info: AgentInfo | string, at = 0): LiveAgent {
    const name = typeof info === 'string' ? info : info.name;
    let agent = this.agents.get(name);
    if (!agent) {
      agent = { name, tier: '', noAgent: false, state: 'idle', since: at, turns: 0, degraded: 0, failed: 0 };
      this.agents.set(name, agent);
    }
    if (typeof info !== 'string') {
      agent.tier = info.tier ?? agent.tier;
      agent.noAgent = info.noAgent === true;
    }
    return agent;
  }

  endpoint(id: string): LiveEndpoint {
    let ep = this.endpoints.get(id);
    if (!ep) {
      ep = {
        id,
        breaker: 'closed',
        openUntil: null,
        cooldownUntil: 0,
        disabledUntil: 0,
        creditOut: false,
        ok: 0,
        faults: 0,
        rateLimited: 0,
      };
      this.endpoints.set(id, ep);
    }
    return ep;
  }

  /**
   * Endpoints out of credit (a credit fault, or disabled for credit now) whose provider has no key of
   * the user's in use yet: where `/byok` would help.
   */
  creditOut(now: number): LiveEndpoint[] {
    const covered = new Set(this.byok.values());
    return [...this.endpoints.values()].filter(
      (e) =>
        !this.byok.has(e.id) &&
        !covered.has(e.provider ?? '') &&
        (e.creditOut || (e.disabledUntil > now && /credit|quota|spend/i.test(e.disabledReason ?? ''))),
    );
  }

  /** Folds the supervisor's health view in (breakers, cooldowns, disabled keys, in-flight calls). */
  applyHealth(health: unknown): void {
    if (!Array.isArray(health)) return;
    for (const h of health) {
      const row = rec(h);
      const id = str(row.id);
      if (!id) continue;
      const ep = this.endpoint(id);
      const descriptor = rec(row.descriptor);
      ep.provider = str(descriptor.provider) ?? ep.provider;
      ep.model = str(descriptor.model) ?? ep.model;
      ep.breaker = str(row.breaker) ?? ep.breaker;
      ep.openUntil = num(row.openUntil) ?? null;
      ep.cooldownUntil = num(row.cooldownUntil) ?? ep.cooldownUntil;
      ep.disabledUntil = num(row.disabledUntil) ?? ep.disabledUntil;
      const reason = str(row.disabledReason);
      if (reason !== undefined) ep.disabledReason = reason;
      else delete ep.disabledReason;
      const inFlight = num(row.inFlight);
      if (inFlight !== undefined) ep.inFlight = inFlight;
    }
  }

  /** Folds the supervisor's token view in. */
  applyTokens(tokens: unknown): void {
    const t = rec(tokens);
    const limit = num(t.limit);
    const held = num(t.held);
    if (limit === undefined || held === undefined) return;
    this.tokens = { limit, held, queued: Array.isArray(t.queue) ? t.queue.length : 0 };
  }

  /** Applies one runtime event; returns what a plain log should say about it (often nothing). */
  apply(event: RuntimeEvent): string[] {
    const data = rec(event.data);
    const at = num(event.at) ?? 0;
    switch (event.type) {
      case 'run.started':
        return this.#runStarted(data, at);
      case 'run.finished':
        return [`run ${str(data.runId) ?? this.runId ?? '?'} finished: ${str(data.status) ?? '?'}`];
      case 'round.started':
        return [`round ${num(data.round) ?? '?'} started`];
      case 'round.committed':
        return [`round ${num(data.round) ?? '?'} committed (${num(data.turns) ?? '?'} turns)`];
      case 'agent.state': {
        if (!event.agent) return [];
        const agent = this.addAgent(event.agent, at);
        const state = str(data.state) ?? agent.state;
        agent.state = state;
        agent.worker = str(data.worker) ?? agent.worker;
        agent.since = at;
        if (state !== 'cooling' && state !== 'queued') delete agent.waitUntil;
        return [`${agent.name} ${state} (was ${str(data.previous) ?? '?'})`];
      }
      case 'token.wait': {
        if (!event.agent) return [];
        const agent = this.addAgent(event.agent, at);
        agent.waitUntil = num(data.until);
        if (event.endpoint) agent.endpoint = event.endpoint;
        return [];
      }
      case 'token.granted':
        if (event.agent && event.endpoint) this.addAgent(event.agent, at).endpoint = event.endpoint;
        return [];
      case 'call.attempt':
        return this.#call(event.endpoint, event.agent, data, at);
      case 'breaker.state': {
        if (!event.endpoint) return [];
        const ep = this.endpoint(event.endpoint);
        ep.breaker = str(data.state) ?? ep.breaker;
        ep.openUntil = num(data.openUntil) ?? null;
        return [`endpoint ${ep.id} breaker ${ep.breaker} (was ${str(data.previous) ?? '?'})`];
      }
      case 'turn.completed':
        return event.agent ? this.#turnCompleted(event.agent, data, at) : [];
      case 'policy.log':
        return [`${event.agent ?? 'policy'}: ${str(data.message) ?? ''}`];
      case 'byok.injected': {
        if (!event.endpoint) return [];
        const provider = str(data.provider) ?? '?';
        this.byok.set(event.endpoint, provider);
        this.endpoint(event.endpoint).provider = provider;
        return [`your ${provider} key ${str(data.masked) ?? ''} is in use as endpoint ${event.endpoint}`];
      }
      case 'byok.expired': {
        if (!event.endpoint) return [];
        this.byok.delete(event.endpoint);
        this.endpoints.delete(event.endpoint);
        const reason = str(data.reason) ?? '?';
        return [`your ${str(data.provider) ?? '?'} key ${str(data.masked) ?? ''} was removed (${reason})`];
      }
      default:
        return [];
    }
  }

  /** `run.started`: the run's id, scenario, agents and endpoints; one line saying so. */
  #runStarted(data: Record<string, unknown>, at: number): string[] {
    this.runId = str(data.runId) ?? this.runId;
    this.scenario = str(data.scenario) ?? this.scenario;
    const agents = Array.isArray(data.agents) ? data.agents : [];
    for (const a of agents) {
      const info = rec(a);
      if (str(info.name)) this.addAgent(info as unknown as AgentInfo, at);
    }
    for (const id of Array.isArray(data.endpoints) ? data.endpoints : []) if (str(id)) this.endpoint(id);
    const resumed = num(data.resumedFrom);
    return [
      `run ${this.runId ?? '?'} started: ${this.scenario ?? '?'}, ${num(data.rounds) ?? '?'} rounds, ` +
        `${agents.length} agents${resumed !== undefined ? ` (resumed after round ${resumed})` : ''}`,
    ];
  }

  /** `turn.completed`: the agent's counts; a line for a degraded or failed turn, or every turn of a worker run. */
  #turnCompleted(name: string, data: Record<string, unknown>, at: number): string[] {
    const agent = this.addAgent(name, at);
    agent.turns++;
    const outcome = str(data.outcome);
    const worker = str(data.worker);
    // A run spread over workers: every turn says which worker asked it (the log of who did what).
    if (worker) {
      agent.worker = worker;
      if (data.degraded === true) agent.degraded++;
      else if (outcome === 'failed') agent.failed++;
      const where = [num(data.round) !== undefined ? `round ${num(data.round)}` : '', str(data.itemId) ?? '']
        .filter(Boolean)
        .join(' ');
      return [
        `${agent.name} ${data.degraded === true ? 'answered degraded' : (outcome ?? '?')}${where ? ` (${where})` : ''} on worker ${worker}`,
      ];
    }
    if (data.degraded === true) {
      agent.degraded++;
      const reason = str(data.degradedReason);
      return [`${agent.name} answered degraded${reason ? ` (${reason})` : ''}`];
    }
    if (outcome === 'failed') {
      agent.failed++;
      return [`${agent.name} turn failed`];
    }
    return [];
  }

  #call(endpoint: string | undefined, agent: string | undefined, data: Record<string, unknown>, at: number) {
    if (!endpoint) return [];
    const ep = this.endpoint(endpoint);
    ep.provider = str(data.provider) ?? ep.provider;
    ep.model ??= str(data.model);
    if (agent) this.addAgent(agent, at).endpoint = endpoint;
    if (data.outcome === 'ok') {
      ep.ok++;
      // A call that was already on its way when the credit ran out proves nothing about the key now.
      const started = num(data.startedAt) ?? at;
      if (ep.creditOutAt === undefined || started >= ep.creditOutAt) ep.creditOut = false;
      const resetAsked = num(data.resetCappedFromMs);
      return resetAsked !== undefined
        ? [
            `endpoint ${ep.id}: a rate-limit reset ${formatDuration(resetAsked, 'short')} away was cut to its maxRetryAfterMs`,
          ]
        : [];
    }
    ep.faults++;
    const kind = str(data.faultKind);
    if (num(data.status) === 429 || kind === 'rate_limited') ep.rateLimited++;
    const retryAfter = num(data.retryAfterMs);
    if (kind === 'rate_limited' && retryAfter !== undefined)
      ep.cooldownUntil = Math.max(ep.cooldownUntil, at + retryAfter);
    const asked = num(data.retryAfterCappedFromMs);
    const capped =
      asked !== undefined
        ? [
            `endpoint ${ep.id} asked to wait ${formatDuration(asked, 'short')}; waiting ${retryAfter !== undefined ? formatDuration(retryAfter, 'short') : 'its cap'} instead (maxRetryAfterMs)`,
          ]
        : [];
    if (kind === 'credit_exhausted') {
      const first = !ep.creditOut;
      ep.creditOut = true;
      ep.creditOutAt = at;
      if (first) return [...capped, byokHint(ep)];
    }
    return capped;
  }
}

/**
 * The line that tells the user a key of their own would help: one per provider, naming its endpoints.
 *
 * @example
 * ```ts
 * byokHint({ id: 'primary', provider: 'openai' });
 * // 'credit exhausted on primary (openai): type /byok openai KEY to let the agents go on with your own key'
 * ```
 */
export function byokHint(...endpoints: readonly Pick<LiveEndpoint, 'id' | 'provider'>[]): string {
  const provider = endpoints[0]?.provider ?? 'PROVIDER';
  return (
    `credit exhausted on ${endpoints.map((e) => e.id).join(', ')} (${provider}): type /byok ${provider} KEY ` +
    'to let the agents go on with your own key'
  );
}
