import { fromPromise } from 'xstate';
import type { CheckHealthInput, CheckHealthOutput } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';

/** The agent machine's `checkHealth`: whether any endpoint the agent may use is usable now. */
export function createCheckHealthActor(deps: {
  readonly endpoints: EndpointRegistry;
  readonly endpointsOf: (agent: string, chain: string) => readonly string[];
  readonly clock: Clock;
}) {
  const { endpoints, endpointsOf, clock } = deps;
  return fromPromise<CheckHealthOutput, CheckHealthInput>(async ({ input }) => {
    const now = clock.now();
    return { healthy: endpoints.usable(endpointsOf(input.agent, input.chain), now), at: now };
  });
}
