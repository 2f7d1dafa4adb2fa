import type { Clock } from '../clock/clock.ts';
import type { EngineResult } from '../core/engine-types.ts';
import { isEngineFaultError } from '../core/fault.ts';
import type { CallRecordEvent } from './agent-actors.ts';

/** The label the key vault gives a BYOK key's check call (`byok-check:<endpoint id>`). */
const CHECK_PREFIX = 'byok-check:';

/**
 * Runs a token holder's upstream call and reports it as a call attempt: a BYOK key's check call reaches the
 * provider like any other, so the call log, the metrics and the traces count it (as a probe: no agent asked for
 * it). A label that is not a key check runs unreported.
 *
 * @example
 * ```ts
 * const result = await reportedCall('byok-check:byok:s1:openai:ab12', () => engine.call(req), clock, onCall);
 * ```
 */
export async function reportedCall<T>(
  label: string,
  run: () => Promise<T>,
  clock: Clock,
  onCall: (record: CallRecordEvent) => void,
): Promise<T> {
  if (!label.startsWith(CHECK_PREFIX)) return run();
  const endpointId = label.slice(CHECK_PREFIX.length);
  const startedAt = clock.now();
  const wallStartedAt = Date.now();
  const base = { tier: 'byok-check', endpointId, startedAt, wallStartedAt, probe: true } as const;
  try {
    const result = await run();
    const r = result as Partial<EngineResult>;
    if (r?.endpoint)
      onCall({
        ...base,
        provider: r.endpoint.provider,
        model: r.model ?? r.endpoint.model,
        requestModel: r.endpoint.model,
        outcome: 'ok',
        at: clock.now(),
        ...(r.usage ? { usage: r.usage } : {}),
      });
    return result;
  } catch (e) {
    // A fault the provider answered (or a transport failure) was an upstream call; anything else sent nothing.
    if (isEngineFaultError(e) && e.fault.kind !== 'cancelled')
      onCall({
        ...base,
        provider: e.fault.provider,
        model: 'unknown',
        outcome: 'fault',
        at: clock.now(),
        fault: e.fault,
      });
    throw e;
  }
}
