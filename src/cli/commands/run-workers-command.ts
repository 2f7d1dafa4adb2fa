import { Registry } from 'prom-client';
import type { RunReport } from '../../report/report-types.ts';
import { WorkersNeedPostgresError } from '../../runs/workers/start-worker-run.ts';
import { createRunStore } from '../../store/run-store.ts';
import { CliError } from '../cli-error.ts';
import type { Print } from '../cli-output.ts';
import { openCliDatabase, storeUrl } from '../cli-store.ts';
import type { RunCommandOptions } from './run-command-options.ts';
import { checkCoordination, checkEmulatorUrl, listenForMetrics } from './run-flag-checks.ts';

/** `run --workers N` (or `resume` of a run started so): what a spread run cannot do is refused in one line. */
export async function runWorkersCommand(options: RunCommandOptions, print: Print): Promise<RunReport> {
  if (options.dataDir || !storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) }))
    throw new CliError(new WorkersNeedPostgresError().message);
  const unsupported = [
    options.policy === 'status-quo' ? '--policy status-quo' : '',
    options.providers === 'real' ? '--providers real' : '',
  ].filter(Boolean);
  if (unsupported.length > 0)
    throw new CliError(
      `--workers does not go with ${unsupported.join(', ')} yet; drop it or run in one process`,
    );
  if (options.emulatorUrl !== undefined) checkEmulatorUrl(options.emulatorUrl);
  // Checked and reached before the run is stored, as for one process.
  const coordination =
    options.coordinationUrl !== undefined
      ? await checkCoordination(options.coordinationUrl, options.coordinationPrefix)
      : undefined;
  // Bound before the run exists: a port in use stops the command before anything is stored.
  const registry = new Registry();
  const metrics =
    options.metricsPort !== undefined ? await listenForMetrics(registry, options.metricsPort) : undefined;
  try {
    const { runWithWorkers } = await import('./run-workers.ts');
    return await runWithWorkers({
      ...(options.workers !== undefined ? { workers: options.workers } : {}),
      ...(options.resumeRunId !== undefined ? { resumeRunId: options.resumeRunId } : {}),
      ...(options.scenario ? { scenario: options.scenario } : {}),
      ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
      ...(options.runId ? { runId: options.runId } : {}),
      ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
      ...(coordination?.url
        ? {
            coordination: {
              url: coordination.url,
              ...(coordination.keyPrefix !== undefined ? { keyPrefix: coordination.keyPrefix } : {}),
            },
          }
        : {}),
      ...(options.json ? { json: true } : {}),
      ...(options.live === false ? { live: false } : {}),
      ...(options.stream ? { stream: true } : {}),
      ...(options.onText ? { onText: options.onText } : {}),
      ...(options.vizPort !== undefined ? { vizPort: options.vizPort } : {}),
      ...(metrics ? { metrics: { server: metrics, registry } } : {}),
      print,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } finally {
    await metrics?.close();
  }
}

/** Whether `resume <run-id>` names a run started with `--workers` (then it goes on with workers). */
export async function isWorkersResume(options: RunCommandOptions): Promise<boolean> {
  if (options.resumeRunId === undefined || options.dataDir) return false;
  const url = storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) });
  if (!url) return false;
  const database = await openCliDatabase({ databaseUrl: url });
  try {
    const { isWorkerRun } = await import('../../runs/workers/resume-worker-run.ts');
    return isWorkerRun(await createRunStore(database).getRun(options.resumeRunId));
  } finally {
    await database.close();
  }
}
