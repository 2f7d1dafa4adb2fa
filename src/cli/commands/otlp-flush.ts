import type { OtlpTracing } from '../../observability/otlp-export.ts';

/** How long the CLI waits for buffered spans to reach the collector before it exits anyway. */
const OTLP_FLUSH_MS = 5_000;

/** Sends the buffered spans, for at most OTLP_FLUSH_MS; says in one line when spans were lost, and never hangs. */
export async function flushOtlp(otlp: OtlpTracing): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const flushed = await Promise.race([
    otlp.shutdown().then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), OTLP_FLUSH_MS);
    }),
  ]);
  clearTimeout(timer);
  const { count, first } = otlp.failures();
  if (!flushed || count > 0)
    process.stderr.write(
      `breakwater run: traces could not all be sent to ${otlp.origin} (${count > 0 ? `${count} failed exports, first: ${first}` : `no answer within ${OTLP_FLUSH_MS} ms`}); the run itself is unaffected\n`,
    );
  // A collector that never answers keeps sockets open: they must not keep the finished command alive.
  if (!flushed) setTimeout(() => process.exit(process.exitCode ?? 0), 100).unref();
}
