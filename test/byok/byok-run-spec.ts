import type { EmulatorProfile } from '../../src/emulator/emulator-types.ts';

/**
 * The small scenario the end-to-end canary run replays (in a child process, through `runScenario`, the
 * path `breakwater run` takes): three agents on one platform key whose credit runs out in round 1, a
 * BYOK template for openai on the emulator, two rounds of three items.
 */

/** The platform's shared key: not a secret of the test, it runs out of credit early. */
export const PLATFORM_KEY = 'sk-platform-canary-pool-000000000001';

/** The emulator both processes agree on (the parent runs it; the child's spec names it for validation). */
export const CANARY_RUN_PROFILE: EmulatorProfile = {
  seed: 4,
  acceptAnyKey: false,
  answerTokens: 40,
  keys: [{ alias: 'platform', key: PLATFORM_KEY, credit: 700 }],
};

/** The scenario, as the YAML/JSON a user would write. */
export const CANARY_RUN_SPEC = {
  name: 'byok-canary-run',
  description: 'The platform credit runs out; a user types /byok openai KEY; the agents go on with it.',
  runtime: {
    endpoints: [
      { id: 'primary', provider: 'openai', model: 'gpt-4o', emulator: 'openai', apiKey: 'platform' },
    ],
    chains: { main: ['primary'] },
    tiers: ['incident', 'analysis'],
    agentDefaults: { maxWaitMs: 2_000 },
    byok: { templates: { openai: { provider: 'openai', model: 'gpt-4o-mini', emulator: 'openai' } } },
  },
  agents: [
    { name: 'Kai', role: 'You are Kai, the incident commander.', tier: 'incident', chain: 'main' },
    {
      name: 'Yuna',
      role: 'You are Yuna, the on-call SRE.',
      tier: 'incident',
      chain: 'main',
      tools: ['lookup_metric'],
    },
    { name: 'Miso', role: 'You are Miso, the finance analyst.', tier: 'analysis', chain: 'main' },
  ],
  rounds: {
    count: 2,
    seePreviousRound: true,
    items: [
      { id: 'U01', kind: 'urgent', title: 'Checkout API p99 latency above 4 s' },
      { id: 'U04', kind: 'urgent', title: 'Primary LLM provider out of credit on the shared key' },
      { id: 'C11', kind: 'composite', title: 'Letting users bring their own provider key (BYOK)' },
    ],
  },
  emulator: CANARY_RUN_PROFILE,
};
