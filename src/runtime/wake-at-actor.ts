import { fromCallback } from 'xstate';
import type { AgentEvent, WakeAtInput } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';

/** The agent machine's `wakeAt`: a `WAKE` at an instant of the run's clock, from the runtime's one timer heap. */
export function createWakeAtActor(deps: { readonly timers: TimerHeap; readonly clock: Clock }) {
  const { timers, clock } = deps;
  return fromCallback<AgentEvent, WakeAtInput>(({ input, sendBack }) => {
    const timer = timers.schedule(input.at, () => sendBack({ type: 'WAKE', output: { at: clock.now() } }));
    return () => timer.cancel();
  });
}
