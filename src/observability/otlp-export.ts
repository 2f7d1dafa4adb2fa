import { trace } from '@opentelemetry/api';

/** Tracing to an OTLP collector, set up for the CLI. */
export interface OtlpTracing {
  /** Sends what is buffered and stops (call before the process exits). */
  shutdown(): Promise<void>;
}

/**
 * When the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) variable is set,
 * registers a tracer provider that batches spans to that collector over OTLP/HTTP (JSON), so every supervisor
 * the process creates traces its turns there. The exporter reads the other standard variables itself
 * (`OTEL_EXPORTER_OTLP_HEADERS`, timeouts). Returns undefined when no endpoint is set. The SDK packages are
 * optional dependencies, loaded only here: without them this says so in one error.
 *
 * @example
 * ```ts
 * const otlp = await startOtlpTracing(process.env); // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
 * try { await run(); } finally { await otlp?.shutdown(); }
 * ```
 */
export async function startOtlpTracing(env: NodeJS.ProcessEnv): Promise<OtlpTracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  let sdk: typeof import('@opentelemetry/sdk-trace-base');
  let otlp: typeof import('@opentelemetry/exporter-trace-otlp-http');
  let resources: typeof import('@opentelemetry/resources');
  try {
    sdk = await import('@opentelemetry/sdk-trace-base');
    otlp = await import('@opentelemetry/exporter-trace-otlp-http');
    resources = await import('@opentelemetry/resources');
  } catch {
    throw new Error(
      'OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed; install the optional ' +
        'dependencies (npm install @opentelemetry/sdk-trace-base @opentelemetry/exporter-trace-otlp-http ' +
        '@opentelemetry/resources) or unset it',
    );
  }
  const provider = new sdk.BasicTracerProvider({
    // The standard OTEL_SERVICE_NAME names the service; without it, `breakwater`.
    resource: resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'breakwater' }),
    spanProcessors: [new sdk.BatchSpanProcessor(new otlp.OTLPTraceExporter())],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
    },
  };
}
