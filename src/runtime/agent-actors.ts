import type { Logger } from 'pino';
import { fromPromise } from 'xstate';
import type {
  AnswerDegradedInput,
  AnswerDegradedOutput,
  CallEngineInput,
  CallOutcome,
  RunToolsInput,
  RunToolsOutput,
} from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { DegradedResponder } from '../degraded/degraded-responder.ts';
import type { EngineResult } from '../engines/engine-types.ts';
import { type Fault, isEngineFaultError } from '../faults/fault.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { AgentDefinition, LlmAgentDefinition } from './agent-definition.ts';
import type { EnginePool } from './engine-pool.ts';
import type { ToolResultRecord } from './turn.ts';

/**
 * A memo of finished calls keyed by idempotency key. The durable store implements it, so a call whose
 * result was committed is read back instead of being asked again (XState re-runs an invoked promise
 * that was in flight when the process died).
 */
export interface CallMemo {
  recall(key: string): Promise<unknown | undefined>;
  /**
   * Writes a finished call's result. The runtime does not wait for it (the concurrency token is given back
   * first); whoever commits must call {@link CallMemo.settle} before committing.
   */
  remember(key: string, value: unknown): Promise<void>;
  /** Resolves when every write started so far has landed. */
  settle?(): Promise<void>;
}

export interface AgentActorDeps {
  readonly pool: EnginePool;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly definitions: ReadonlyMap<string, AgentDefinition>;
  readonly degraded: DegradedResponder;
  readonly memo?: CallMemo;
  /** Receives one record per upstream attempt (the call log as data). */
  readonly onCall?: (record: CallRecordEvent) => void;
}

/** One upstream attempt, as the runtime reports it. */
export interface CallRecordEvent {
  readonly agent: string;
  readonly tier: string;
  readonly endpointId: string;
  readonly provider: string;
  readonly model: string;
  readonly outcome: 'ok' | 'fault';
  readonly startedAt: number;
  readonly at: number;
  readonly fault?: Fault;
  readonly memoized?: boolean;
}

function internalFault(e: unknown, endpointId: string): Fault {
  const message = scrubSecrets(e instanceof Error ? e.message : String(e));
  return { kind: 'bad_request', provider: 'openai', message: `internal error: ${message}`, endpointId };
}

/**
 * The real implementations of the agent machine's named actors: the engine call (memoized, logged one line
 * per attempt with `confirmed_model` on success, as seed 000 counts them), the tools, and the degraded answer.
 */
export function createAgentActors(deps: AgentActorDeps) {
  const { pool, clock, logger, memo } = deps;
  // The memo write happens off the call's path: the token goes back to the supervisor at once.
  const remember = (key: string, value: unknown) => {
    memo?.remember(key, value).catch((e: unknown) => {
      logger.warn(
        { key, error: scrubSecrets(e instanceof Error ? e.message : String(e)) },
        'call memo write failed',
      );
    });
  };

  const callEngine = fromPromise<CallOutcome, CallEngineInput>(async ({ input, signal }) => {
    const key = input.request.idempotencyKey;
    const remembered = (await memo?.recall(key)) as EngineResult | undefined;
    if (remembered) return { ok: true, result: remembered, at: clock.now(), memoized: true };
    const engine = pool.engine(input.endpointId);
    const describe = (outcome: 'ok' | 'fault', at: number, fault?: Fault): CallRecordEvent => ({
      agent: input.agent,
      tier: input.tier,
      endpointId: input.endpointId,
      provider: engine?.endpoint.provider ?? 'unknown',
      model: engine?.endpoint.model ?? 'unknown',
      outcome,
      startedAt: started,
      at,
      ...(fault ? { fault } : {}),
    });
    const started = clock.now();
    const line = { agent: input.agent, tier: input.tier, endpoint: input.endpointId, waitMs: input.waitMs };
    if (!engine) {
      // A BYOK key that expired or was revoked between the grant and the call: nothing was sent, and another
      // endpoint (or the degraded layer) can still answer, so it is a swappable auth fault, not a bug.
      const fault: Fault = input.endpointId.startsWith('byok:')
        ? {
            kind: 'auth',
            provider: 'openai',
            code: 'byok_expired',
            message: `BYOK endpoint ${input.endpointId} is gone (its key expired or was revoked); nothing was sent`,
            endpointId: input.endpointId,
          }
        : internalFault(new Error(`endpoint ${input.endpointId} is gone`), input.endpointId);
      return { ok: false, fault, at: clock.now() };
    }
    try {
      const result = await engine.call({ ...input.request, signal });
      const at = clock.now();
      logger.info(
        {
          ...line,
          outcome: 'ok',
          latencyMs: at - started,
          confirmed_model: `${result.endpoint.provider}/${result.model}`,
        },
        'call',
      );
      deps.onCall?.({ ...describe('ok', at), model: result.model });
      remember(key, result);
      return { ok: true, result, at, memoized: false };
    } catch (e) {
      const at = clock.now();
      const fault = isEngineFaultError(e) ? e.fault : internalFault(e, input.endpointId);
      logger.info(
        {
          ...line,
          outcome: 'fault',
          fault: fault.kind,
          status: fault.status,
          retryAfterMs: fault.retryAfterMs,
          latencyMs: at - started,
        },
        'call',
      );
      deps.onCall?.(describe('fault', at, fault));
      return { ok: false, fault, at };
    }
  });

  const runTools = fromPromise<RunToolsOutput, RunToolsInput>(async ({ input, signal }) => {
    const def = deps.definitions.get(input.agent) as LlmAgentDefinition | undefined;
    const results: ToolResultRecord[] = [];
    for (const call of input.calls) {
      const key = `${input.keyPrefix}:${call.id}`;
      const remembered = (await memo?.recall(key)) as ToolResultRecord | undefined;
      if (remembered) {
        results.push(remembered);
        continue;
      }
      const tool = def?.tools?.[call.name];
      let record: ToolResultRecord;
      if (!tool) {
        record = { turnId: input.turnId, call, result: `unknown tool "${call.name}"`, isError: true };
      } else {
        try {
          const value = await tool.run(call.arguments, { signal, agent: input.agent, idempotencyKey: key });
          record = {
            turnId: input.turnId,
            call,
            result: typeof value === 'string' ? value : JSON.stringify(value),
            isError: false,
          };
        } catch (e) {
          const message = scrubSecrets(e instanceof Error ? e.message : String(e));
          record = { turnId: input.turnId, call, result: `tool failed: ${message}`, isError: true };
        }
      }
      logger.info({ agent: input.agent, tool: call.name, isError: record.isError }, 'tool');
      remember(key, record);
      results.push(record);
    }
    return { results, at: clock.now() };
  });

  const answerDegraded = fromPromise<AnswerDegradedOutput, AnswerDegradedInput>(async ({ input }) => {
    const answer = deps.degraded.answer(
      input.agent,
      input.prompt,
      { memory: input.memory.slots },
      input.reason,
    );
    logger.warn({ agent: input.agent, reason: input.reason, source: answer.source }, 'degraded answer');
    return { answer, at: clock.now() };
  });

  return { callEngine, runTools, answerDegraded };
}
