export {
  type BreakwaterMetrics,
  type BreakwaterMetricsOptions,
  createBreakwaterMetrics,
} from './prometheus-metrics.ts';
export { type MetricsServer, type MetricsServerOptions, startMetricsServer } from './metrics-server.ts';
export { globalTracingRegistered } from './global-tracing.ts';
export { type TracingOptions, TurnTracer } from './turn-tracer.ts';
