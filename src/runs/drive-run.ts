import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import type { AgentInfo, RuntimeEventListener } from '../core/runtime-event.ts';
import type { Emulator } from '../emulator/emulator-server.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { RoundPlan } from '../scenarios/scenario-types.ts';
import { crashPoint } from '../store/crash-point.ts';
import type { RunStore } from '../store/run-store.ts';
import type { RunRecord } from '../store/store-types.ts';
import { keyFormatOf, TURN_KEY_FORMAT } from '../store/turn-key.ts';
import { createEventRecorder } from './event-recorder.ts';
import { type ExecutorParts, policyExecutor } from './policy-executor.ts';
import { runRounds } from './round-runner.ts';
import type { RunPolicy } from './run-scenario-options.ts';
import { storeCallMemo } from './store-call-memo.ts';
import type { TurnExecutor } from './turn-executor.ts';

/** A stored run, its executor's parts and its timeline: what {@link driveRun} runs. */
export interface DriveParts extends Omit<ExecutorParts, 'memo'> {
  readonly store: RunStore;
  readonly runId: string;
  readonly existing: RunRecord | undefined;
  readonly policy: RunPolicy;
  readonly agents: AgentInfo[];
  readonly plans: readonly RoundPlan[];
  readonly emulator: Emulator | undefined;
  /** The executor, once built: the caller stops it whatever happens. */
  readonly started: (executor: TurnExecutor) => void;
}

/**
 * Runs the rounds of a stored run, its events recorded with them. From here on the run exists: whatever fails
 * marks it (failed, with the reason; interrupted when aborted).
 */
export async function driveRun(d: DriveParts): Promise<RunRecord> {
  const { options, store, runId, existing, clock, plans, agents } = d;
  let unsubscribe: (() => void) | undefined;
  let recorder: ReturnType<typeof createEventRecorder> | undefined;
  let emit: RuntimeEventListener | undefined;
  try {
    if (existing) await store.setRunStatus(runId, 'running');
    const memo = await storeCallMemo(store, runId, (existing?.currentRound ?? 0) + 1, clock, {
      keyFormat: existing ? keyFormatOf(existing.config) : TURN_KEY_FORMAT,
    });
    const executor = policyExecutor(d.policy, { ...d, memo });
    d.started(executor);
    if (existing) crashPoint('restore');
    const rec = createEventRecorder(store, runId);
    recorder = rec;
    const send: RuntimeEventListener = (e) => {
      rec.listener(e);
      options.onEvent?.(e);
    };
    emit = send;
    unsubscribe = executor.subscribeEvents(send);
    await options.onStart?.({
      runId,
      policy: d.policy,
      executor,
      store,
      clock,
      agents,
      rounds: plans.length,
      ...(d.emulator ? { emulator: d.emulator } : {}),
    });
    send({
      type: 'run.started',
      at: clock.now(),
      data: {
        runId,
        scenario: d.spec.name,
        rounds: plans.length,
        agents,
        endpoints: d.resolved.runtime.endpoints.map((e) => e.id),
        ...(existing ? { resumedFrom: existing.currentRound } : {}),
      },
    });
    const run = await runRounds({
      runId,
      spec: d.resolved,
      plans,
      executor,
      store,
      clock,
      agents: agents.filter((a) => !a.noAgent).map((a) => a.name),
      machineVersion: AGENT_MACHINE_VERSION,
      emit: send,
      journal: rec,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    send({ type: 'run.finished', at: clock.now(), data: { runId, status: run.status } });
    unsubscribe();
    // Every round is committed: what was heard after the last commit belongs to no round.
    await rec.flush({ afterLastCommit: true });
    return run;
  } catch (e) {
    const status = options.signal?.aborted ? 'interrupted' : 'failed';
    emit?.({ type: 'run.finished', at: clock.now(), data: { runId, status } });
    unsubscribe?.();
    // The round in progress is not committed: its events are dropped (it records them when it is asked again).
    await recorder?.flush().catch(() => {});
    await store
      .setRunStatus(runId, status, status === 'failed' ? { failure: failureLine(e) } : {})
      .catch(() => {});
    throw e;
  }
}

/** Why a run failed, in one line, as stored with it (text from outside is sanitized where it enters). */
function failureLine(e: unknown): string {
  const text = e instanceof Error ? `${e.name === 'Error' ? '' : `${e.name}: `}${e.message}` : String(e);
  return scrubSecrets(text.split('\n')[0] ?? '').slice(0, 500);
}
