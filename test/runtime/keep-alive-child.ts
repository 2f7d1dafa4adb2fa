/**
 * A user's script, run as its own process by keep-alive.test.ts: one endpoint whose first answer is a 429 with
 * Retry-After 2 s (its emulator in a child of its own, so this process holds nothing open itself), one top-level
 * `await agent.ask()`, and no `stop()`. The agent cools on timers that never hold a process open; while the ask is
 * pending the runtime must keep the process alive, and once it settled the process must end by itself.
 */
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';

const baseURL = process.argv[2]!;
const supervisor = createSupervisor({
  endpoints: [
    { id: 'mini', provider: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-keepalive-000000000000', baseURL },
  ],
  chains: { main: ['mini'] },
  agentDefaults: { maxWaitMs: 30_000 },
});
const turn = await supervisor.spawnAgent({ name: 'Kai', chain: 'main' }).ask('hello');
console.log(
  JSON.stringify({
    outcome: turn.outcome,
    faults: turn.faults.map((f) => f.kind),
    state: supervisor.state(),
  }),
);
