/**
 * `breakwater/observability`: Prometheus metrics of a supervisor, a `/metrics` server on 127.0.0.1, and OTLP
 * export for scripts (tracing itself needs nothing from here: register a tracer provider before
 * `createSupervisor`, or pass `{ tracing: { tracer } }`).
 *
 * @example
 * ```ts
 * import { createBreakwaterMetrics, startMetricsServer } from 'breakwater/observability';
 * const metrics = createBreakwaterMetrics(supervisor);
 * const server = await startMetricsServer(metrics.registry, { port: 9464 });
 * ```
 */
export { globalTracingRegistered } from '../runtime/tracing/global-tracing.ts';
export {
  type MetricsServer,
  type MetricsServerOptions,
  startMetricsServer,
} from '../observability/metrics-server.ts';
export { type OtlpTracing, startOtlpTracing } from '../observability/otlp-export.ts';
export {
  type BreakwaterMetrics,
  type BreakwaterMetricsOptions,
  createBreakwaterMetrics,
  endpointLabel,
} from '../observability/prometheus-metrics.ts';
export type { TracingOptions } from '../runtime/tracing/turn-tracer.ts';
