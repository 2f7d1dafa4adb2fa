import { trace } from '@opentelemetry/api';

/** Tracing to an OTLP collector, set up for the CLI. */
export interface OtlpTracing {
  /** Where spans go (scheme, host and port only: never a path's credentials). */
  readonly origin: string;
  /** Sends what is buffered and stops (call before the process exits). */
  shutdown(): Promise<void>;
  /** Exports that failed so far, with the first one's error name (the collector refused or was unreachable). */
  failures(): { readonly count: number; readonly first?: string };
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
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return undefined;
  let origin: string;
  try {
    const url = new URL(endpoint);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
    origin = url.origin;
  } catch {
    // The value is not echoed: a collector URL may carry a token.
    throw new Error(
      'OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL; give the collector like http://127.0.0.1:4318, or unset it',
    );
  }
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
  let count = 0;
  let first: string | undefined;
  const exporter = new otlp.OTLPTraceExporter();
  // Count failed exports (the SDK reports them to its diagnostics only): the CLI says so in one line at the end.
  const exportSpans = exporter.export.bind(exporter);
  exporter.export = (spans, done) =>
    exportSpans(spans, (result) => {
      if (result.code !== 0) {
        count++;
        first ??= result.error?.name ?? 'error';
      }
      done(result);
    });
  const provider = new sdk.BasicTracerProvider({
    // The standard OTEL_SERVICE_NAME names the service; without it, `breakwater`.
    resource: resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'breakwater' }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    origin,
    failures: () => ({ count, ...(first !== undefined ? { first } : {}) }),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
    },
  };
}
