import { ProxyTracerProvider, trace } from '@opentelemetry/api';

const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * Whether the application registered an OpenTelemetry tracer provider (`provider.register()` or
 * `trace.setGlobalTracerProvider`). Without one every span is a no-op, and breakwater skips tracing entirely so
 * that it costs nothing.
 *
 * @example
 * ```ts
 * if (globalTracingRegistered()) console.log('spans go to the registered provider');
 * ```
 */
export function globalTracingRegistered(): boolean {
  const provider = trace.getTracerProvider();
  // The API hands out a proxy whose delegate is its no-op provider (a singleton) until one is registered.
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate !== NOOP_PROVIDER;
}
