import type { Registry } from 'prom-client';
import type { CoordinationOptions } from '../../coordination/coordination-options.ts';
import { type MetricsServer, startMetricsServer } from '../../observability/metrics-server.ts';
import { coordinationBackendOf, probeCoordination } from '../../runs/workers/worker-coordination.ts';
import { storableTextProblem, wireNameProblem } from '../../scenarios/scenario-text.ts';
import { CliError } from '../cli-error.ts';

/*
 * The checks of `run` and `resume`'s flags that happen before a run is stored: a bad value, a port in use or an
 * unreachable backend is one line naming the flag, and no run.
 */

/** The `/metrics` server of `--metrics-port`; a port in use is one line naming the flag. */
export async function listenForMetrics(registry: Registry, port: number): Promise<MetricsServer> {
  try {
    return await startMetricsServer(registry, { port });
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    throw new CliError(
      code === 'EADDRINUSE'
        ? `--metrics-port ${port}: the port is in use on 127.0.0.1; give another, or 0 for any free port`
        : `--metrics-port ${port}: cannot listen (${String(code ?? (e as Error).message)})`,
    );
  }
}

/** An emulator needs no credentials: a URL carrying some is refused without echoing it. */
export function checkEmulatorUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError('--emulator-url is not a URL; give its control URL, e.g. http://127.0.0.1:4000');
  }
  if (parsed.username || parsed.password)
    throw new CliError(
      '--emulator-url must not carry a user or password (the URL is not shown; the emulator needs none); give e.g. http://127.0.0.1:4000',
    );
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliError('--emulator-url must be an http:// URL, e.g. http://127.0.0.1:4000');
}

/** A run id is part of every call's idempotency key (a request header): refused here, not by every call. */
export function checkRunId(runId: string): string {
  const problem = wireNameProblem(runId) ?? storableTextProblem(runId);
  if (problem) throw new CliError(`--run-id ${problem}`);
  return runId;
}

/**
 * `--coordination-url` (and `--coordination-prefix`): the backend from its scheme, reached once (then closed) so a
 * bad or unreachable one is one line naming the flag, without its password.
 */
export async function checkCoordination(
  url: string,
  keyPrefix: string | undefined,
): Promise<CoordinationOptions> {
  const backend = coordinationBackendOf(url);
  if (keyPrefix !== undefined && !/^[\w.:-]{1,64}$/.test(keyPrefix))
    throw new CliError('--coordination-prefix must be 1-64 letters, digits, _ . : - (e.g. myapp:)');
  const options: CoordinationOptions = {
    backend,
    url,
    ...(backend === 'redis' && keyPrefix !== undefined ? { keyPrefix } : {}),
  };
  try {
    await probeCoordination(options, '--coordination-url');
  } catch (e) {
    throw new CliError(e instanceof Error ? e.message : String(e));
  }
  return options;
}
