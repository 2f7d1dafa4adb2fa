import type { Logger } from 'pino';
import { fromPromise } from 'xstate';
import type { RunToolsInput, RunToolsOutput } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { CallMemo } from '../core/call-memo.ts';
import type { ToolResultRecord } from '../core/turn.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { guarded } from './actor-failure.ts';
import type { AgentDefinition, LlmAgentDefinition } from './agent-definition.ts';

/** What {@link createRunToolsActor} needs. */
export interface RunToolsActorDeps {
  readonly definitions: ReadonlyMap<string, AgentDefinition>;
  readonly memo: CallMemo | undefined;
  /** Writes a tool's result to the memo (see memo-writer.ts). */
  readonly remember: (key: string, value: unknown) => Promise<void>;
  readonly logger: Logger;
  readonly clock: Clock;
}

/**
 * The agent machine's `runTools`: runs the tool calls of an answer in order, each once per turn (a remembered
 * result is given back, not run again: a tool may act on the world), stopping at a cancel. A tool that throws is a
 * result marked as an error, its text scrubbed of secrets.
 */
export function createRunToolsActor(deps: RunToolsActorDeps) {
  const { definitions, memo, remember, logger, clock } = deps;
  return fromPromise<RunToolsOutput, RunToolsInput>(({ input, signal }) =>
    guarded(logger, clock, 'runTools', () => runToolsBody(input, signal)),
  );
  async function runToolsBody(input: RunToolsInput, signal: AbortSignal): Promise<RunToolsOutput> {
    const def = definitions.get(input.agent) as LlmAgentDefinition | undefined;
    const results: ToolResultRecord[] = [];
    for (const call of input.calls) {
      // Cancelled or stopped: no further tool runs (a tool may act on the world); nobody reads the results.
      if (signal.aborted) break;
      const key = `${input.keyPrefix}:${call.id}`;
      const remembered = (await memo?.recall(key)) as ToolResultRecord | undefined;
      if (remembered) {
        results.push(remembered);
        continue;
      }
      const tool = def?.tools?.[call.name];
      let record: ToolResultRecord;
      if (!tool?.run) {
        record = { turnId: input.turnId, call, result: `unknown tool "${call.name}"`, isError: true };
      } else {
        try {
          const value = await tool.run(call.arguments, {
            signal,
            agent: input.agent,
            idempotencyKey: key,
            toolName: call.name,
          });
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
      await remember(key, record);
      results.push(record);
    }
    return { results, at: clock.now() };
  }
}
