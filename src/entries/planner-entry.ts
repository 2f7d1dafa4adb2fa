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
export { shiftCron } from '../planner/cron-shift.ts';
export { type FlexWindow, formatFlex, parseFlex } from '../scenarios/flex-window.ts';
export { formatMove, formatPlan } from '../planner/format-plan.ts';
export { planPage } from '../planner/plan-page.ts';
export { planSchedule } from '../planner/plan-schedule.ts';
export type {
  Breach,
  BreachKind,
  BudgetDemand,
  DemandSummary,
  EndpointDemand,
  HourDemand,
  HourlyBudget,
  MoveKind,
  PeakJob,
  PlanEndpoint,
  PlanInput,
  PlanJob,
  PlanMove,
  PlannedJob,
  PlanOptions,
  PlanPeak,
  PlanProposal,
  PlanResult,
} from '../planner/plan-types.ts';
export { type AgentEstimate, estimatesFromRun, type RunEstimates } from '../planner/run-estimates.ts';
export { type ScenarioPlanOptions, scenarioPlanInput } from '../planner/scenario-plan-input.ts';
export { type RewriteOptions, rewriteScenario } from '../planner/scenario-rewrite.ts';
export { DEFAULT_SEARCH_BUDGET } from '../planner/schedule-search.ts';
