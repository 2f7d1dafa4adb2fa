import type { Logger } from 'pino';
import { fromPromise } from 'xstate';
import type { AnswerDegradedInput, AnswerDegradedOutput } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { DegradedResponder } from '../degraded/degraded-responder.ts';

/** The agent machine's `answerDegraded`: the degraded responder's answer for a turn no endpoint could serve. */
export function createAnswerDegradedActor(deps: {
  readonly degraded: DegradedResponder;
  readonly logger: Logger;
  readonly clock: Clock;
}) {
  const { degraded, logger, clock } = deps;
  return fromPromise<AnswerDegradedOutput, AnswerDegradedInput>(async ({ input }) => {
    const answer = degraded.answer(input.agent, input.prompt, { memory: input.memory.slots }, input.reason);
    logger.warn({ agent: input.agent, reason: input.reason, source: answer.source }, 'degraded answer');
    return { answer, at: clock.now() };
  });
}
