import type { RunReport } from '../../report/report-types.ts';
import { type VizReportEvent, vizCheckOf } from '../../viz/viz-state-types.ts';

/**
 * The run's end with the report's verdicts, for the visualizer's page: published before the server goes.
 *
 * @example
 * ```ts
 * vizSource?.publish(vizReportEvent(clock.now(), run.status, report));
 * ```
 */
export function vizReportEvent(at: number, status: string, report: RunReport): VizReportEvent {
  return {
    type: 'viz.report',
    at,
    data: {
      status,
      checks: report.checks.map(vizCheckOf),
    },
  };
}
