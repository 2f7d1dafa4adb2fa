/**
 * `breakwater plan`: a cron schedule's demand against its quotas, before it runs, and the smallest set of
 * moves that makes it fit.
 */
export { shiftCron } from './cron-shift.ts';
export { type FlexWindow, formatFlex, parseFlex } from '../scenarios/flex-window.ts';
export { formatMove, formatPlan } from './format-plan.ts';
export { planPage } from './plan-page.ts';
export { planSchedule } from './plan-schedule.ts';
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
} from './plan-types.ts';
export { type AgentEstimate, estimatesFromRun, type RunEstimates } from './run-estimates.ts';
export { type ScenarioPlanOptions, scenarioPlanInput } from './scenario-plan-input.ts';
export { type RewriteOptions, rewriteScenario } from './scenario-rewrite.ts';
export { DEFAULT_SEARCH_BUDGET } from './schedule-search.ts';
