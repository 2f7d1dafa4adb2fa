/**
 * `breakwater/planner`: a cron schedule's per-minute demand against its quotas before it runs, and the smallest
 * set of moves (flex shifts, the light chain, `noAgent`) that makes it fit — what `breakwater plan` prints.
 *
 * @example
 * ```ts
 * import { planSchedule } from 'breakwater/planner';
 * const plan = planSchedule({ timezone: 'Asia/Seoul', from, to, endpoints, jobs: [{ name: 'digest', cron: '0 7 * * *', calls: 2, tokens: 3000, chain: ['sonnet'], flex: { beforeMin: 0, afterMin: 30 } }] });
 * console.log(plan.fits, plan.proposal?.moves);
 * ```
 */
export * from '../planner/index.ts';
