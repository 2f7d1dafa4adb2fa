import { Cron } from 'croner';
import { ConfigError } from '../core/errors/config-error.ts';
import { cronProblem } from '../scenarios/scenario-base-schema.ts';
import { isAbsoluteInstant, isTimeZone } from '../clock/zoned-time.ts';
import { shiftCron } from './cron-shift.ts';
import { type FlexWindow, parseFlex } from '../scenarios/flex-window.ts';
import type { HourlyBudget, PlanInput } from './plan-types.ts';

/** Most firings one plan may expand to (the same bound as a scenario's schedule). */
export const MAX_PLAN_FIRINGS = 100_000;

/** Longest window a plan looks at, minutes (a week). */
export const MAX_PLAN_MINUTES = 7 * 24 * 60;

const MINUTE_MS = 60_000;
const DEFAULT_CALL_SECONDS = 6;
const DEFAULT_TOKENS_PER_CALL = 1_000;

/** A job ready for the search: its firings expanded and its options known. */
export interface PreparedJob {
  readonly index: number;
  readonly name: string;
  readonly cron: string;
  readonly flex: FlexWindow;
  /** The chain it uses now; `null` for plain code. */
  readonly chain: string | null;
  readonly calls: number;
  readonly tokens: number;
  readonly operational: boolean;
  readonly needsLlm: boolean;
  readonly priority: number;
  /** Firings from `from − flex.later` to `to + flex.earlier` (a shift may bring them into the window). */
  readonly firings: readonly number[];
}

/** An endpoint with its limits resolved. */
export interface PreparedEndpoint {
  readonly id: string;
  readonly model: string;
  readonly rpm: number | null;
  readonly tpm: number | null;
}

/** A budget with the endpoints it counts. */
export interface PreparedBudget extends HourlyBudget {
  readonly endpoints: readonly number[];
  /** Chains that include one of `endpoints` (what a worst-case budget counts). */
  readonly chains: readonly string[];
}

/** Everything the demand model and the search read. */
export interface PlanContext {
  readonly source: string;
  readonly from: number;
  readonly to: number;
  readonly timezone: string;
  /** Minutes in the window. */
  readonly minutes: number;
  readonly endpoints: readonly PreparedEndpoint[];
  /** Chain name → endpoint indexes. */
  readonly chains: ReadonlyMap<string, readonly number[]>;
  readonly concurrency: number | null;
  readonly callSeconds: number;
  readonly budgets: readonly PreparedBudget[];
  readonly lightChain: string | null;
  readonly jobs: readonly PreparedJob[];
}

function instant(value: string | number, source: string, path: string): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && isAbsoluteInstant(value)) return Date.parse(value);
  throw new ConfigError({
    source,
    path,
    message: `"${String(value)}" is not an instant; write an ISO 8601 date-time with offset (2026-08-17T06:00:00+09:00) or epoch ms`,
  });
}

const positive = (v: number | undefined, fallback: number, source: string, path: string): number => {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v <= 0)
    throw new ConfigError({ source, path, message: `must be a number greater than 0; got ${v}` });
  return v;
};

/** Every firing of `cron` in `[from, to)`, in `timezone`. */
export function expandCron(cron: string, timezone: string, from: number, to: number): number[] {
  const c = new Cron(cron, { timezone, mode: '5-or-6-parts' });
  const out: number[] = [];
  // nextRun is strictly after its argument and works in whole seconds.
  let next = c.nextRun(new Date(Math.floor(from / 1000) * 1000 - 1000));
  while (next && next.getTime() < to) {
    if (next.getTime() >= from) out.push(next.getTime());
    if (out.length > MAX_PLAN_FIRINGS) break;
    next = c.nextRun(next);
  }
  return out;
}

/**
 * Checks a plain plan input and expands its jobs. Bad input is one {@link ConfigError} naming the
 * source, the field and what to do.
 *
 * @example
 * ```ts
 * const ctx = preparePlan(input);
 * ctx.jobs[0]!.firings.length;
 * ```
 */
export function preparePlan(input: PlanInput): PlanContext {
  const source = input.source ?? 'plan input';
  if (!isTimeZone(input.timezone))
    throw new ConfigError({
      source,
      path: 'timezone',
      message: `"${input.timezone}" is not an IANA time zone; write e.g. Asia/Seoul or UTC`,
    });
  const from = instant(input.from, source, 'from');
  const to = instant(input.to, source, 'to');
  if (to <= from) throw new ConfigError({ source, path: 'to', message: 'must be after from' });
  // Whole minutes: the planner counts per clock minute.
  const minutes = Math.ceil((to - from) / MINUTE_MS);
  if (minutes > MAX_PLAN_MINUTES)
    throw new ConfigError({
      source,
      path: 'to',
      message: `makes a window of ${minutes} minutes; a plan looks at most a week (${MAX_PLAN_MINUTES} minutes); shorten it`,
    });
  const endpoints = prepareEndpoints(input, source);
  const chains = prepareChains(input, endpoints, source);
  const lightChain = input.lightChain ?? (chains.has('light') ? 'light' : null);
  if (lightChain !== null && !chains.has(lightChain))
    throw new ConfigError({
      source,
      path: 'lightChain',
      message: `names chain "${lightChain}", which is not defined (defined: ${[...chains.keys()].join(', ')})`,
    });
  const budgets = prepareBudgets(input, endpoints, chains, source);
  const jobs = prepareJobs(input, chains, from, to, source);
  return {
    source,
    from,
    to,
    timezone: input.timezone,
    minutes,
    endpoints,
    chains,
    concurrency:
      input.concurrency === undefined ? null : positive(input.concurrency, 1, source, 'concurrency'),
    callSeconds: positive(input.callSeconds, DEFAULT_CALL_SECONDS, source, 'callSeconds'),
    budgets,
    lightChain,
    jobs,
  };
}

/** The endpoints with their limits checked (`null`: no limit given). */
function prepareEndpoints(input: PlanInput, source: string): PreparedEndpoint[] {
  return input.endpoints.map((e, i) => ({
    id: e.id,
    model: e.model ?? e.id,
    rpm: e.rpm === undefined ? null : positive(e.rpm, 1, source, `endpoints[${i}].rpm`),
    tpm: e.tpm === undefined ? null : positive(e.tpm, 1, source, `endpoints[${i}].tpm`),
  }));
}

/** Chain name → the indexes of its endpoints; a chain naming an unknown endpoint is refused. */
function prepareChains(
  input: PlanInput,
  endpoints: readonly PreparedEndpoint[],
  source: string,
): Map<string, number[]> {
  const ids = new Map(endpoints.map((e, i) => [e.id, i]));
  const chains = new Map<string, number[]>();
  for (const [name, list] of Object.entries(input.chains)) {
    chains.set(
      name,
      list.map((id, j) => {
        const at = ids.get(id);
        if (at === undefined)
          throw new ConfigError({
            source,
            path: `chains.${name}[${j}]`,
            message: `names endpoint "${id}", which is not among the endpoints (${[...ids.keys()].join(', ') || 'none'})`,
          });
        return at;
      }),
    );
  }
  return chains;
}

/** Each budget with the endpoints its `match` names and the chains that reach one of them. */
function prepareBudgets(
  input: PlanInput,
  endpoints: readonly PreparedEndpoint[],
  chains: ReadonlyMap<string, readonly number[]>,
  source: string,
): PreparedBudget[] {
  return (input.budgets ?? []).map((b, i) => {
    positive(b.limit, 1, source, `budgets[${i}].limit`);
    const needle = b.match.toLowerCase();
    const matched = endpoints
      .map((e, j) => (e.model.toLowerCase().includes(needle) || e.id.toLowerCase().includes(needle) ? j : -1))
      .filter((j) => j >= 0);
    const reaching = [...chains].filter(([, list]) => list.some((e) => matched.includes(e))).map(([n]) => n);
    return { ...b, worstCase: b.worstCase !== false, endpoints: matched, chains: reaching };
  });
}

/** Every job checked and its firings expanded; all of them together stay within {@link MAX_PLAN_FIRINGS}. */
function prepareJobs(
  input: PlanInput,
  chains: ReadonlyMap<string, readonly number[]>,
  from: number,
  to: number,
  source: string,
): PreparedJob[] {
  let total = 0;
  return input.jobs.map((job, i): PreparedJob => {
    const at = `jobs[${i}]`;
    const problem = cronProblem(job.cron, input.timezone);
    if (problem)
      throw new ConfigError({
        source,
        path: `${at}.cron`,
        message: `"${job.cron}" does not parse: ${problem}; write 5 fields (min hour day month weekday) or 6 (with seconds first)`,
      });
    const flex = parseFlex(job.flex);
    if (typeof flex === 'string') throw new ConfigError({ source, path: `${at}.flex`, message: flex });
    const chain = job.noAgent ? null : (job.chain ?? null);
    if (chain !== null && !chains.has(chain))
      throw new ConfigError({
        source,
        path: `${at}.chain`,
        message: `names chain "${chain}", which is not defined (defined: ${[...chains.keys()].join(', ') || 'none'})`,
      });
    const firings = expandCron(
      job.cron,
      input.timezone,
      from - flex.later * MINUTE_MS,
      to + flex.earlier * MINUTE_MS,
    );
    total += firings.length;
    if (total > MAX_PLAN_FIRINGS)
      throw new ConfigError({
        source,
        path: `${at}.cron`,
        message: `the jobs expand to more than ${MAX_PLAN_FIRINGS} firings over the window; shorten the window or thin the crons`,
      });
    return {
      index: i,
      name: job.name,
      cron: job.cron,
      flex,
      chain,
      calls: positive(job.calls, 1, source, `${at}.calls`),
      tokens: positive(job.tokensPerCall, DEFAULT_TOKENS_PER_CALL, source, `${at}.tokensPerCall`),
      operational: job.operational === true,
      needsLlm: job.needsLlm !== false,
      priority: job.priority ?? 0,
      firings,
    };
  });
}

const shiftMemo = new WeakMap<PreparedJob, Map<number, string | null>>();

/**
 * The job's cron moved by `minutes`, or `null` when one expression cannot say it. Memoized per job.
 *
 * @example
 * ```ts
 * shiftedCron(job, 10); // '10,40 7-9 * * 1-5'
 * ```
 */
export function shiftedCron(job: PreparedJob, minutes: number): string | null {
  let memo = shiftMemo.get(job);
  if (!memo) {
    memo = new Map();
    shiftMemo.set(job, memo);
  }
  let out = memo.get(minutes);
  if (out === undefined) {
    out = shiftCron(job.cron, minutes) ?? null;
    memo.set(minutes, out);
  }
  return out;
}
