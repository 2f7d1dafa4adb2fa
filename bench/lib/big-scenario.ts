/**
 * A valid scenario of about `bytes` bytes (JSON), for measuring what reading and running a scenario at the 10 MB
 * file limit costs in memory. Every value is within the schema's limits; the bulk is text a user could write:
 * - `items`: a few agents and many agenda items whose `detail` is long (every turn's prompt holds its item's
 *   detail, so the text travels to every agent's call);
 * - `agents`: many agents with long system prompts (`role`) and memory slots, few items.
 * One round, zero emulator latency and the runtime's default concurrency, so a run is quick and its memory is the text's.
 */

/** The shapes {@link bigScenario} can write. */
export type BigScenarioShape = 'items' | 'agents';

/** A sentence-like filler of `length` characters (ASCII, as most scenario text is), varied by `seed`. */
function filler(length: number, seed: number): string {
  const words = [
    'latency',
    'rollback',
    'quota',
    'checkout',
    'replica',
    'incident',
    'cache',
    'retry',
    'shard',
  ];
  let out = '';
  let i = seed;
  while (out.length < length) out += `${words[i++ % words.length]} `;
  return out.slice(0, length);
}

/**
 * The scenario object: serialize it with `JSON.stringify` (or as YAML) and write it.
 *
 * @example
 * ```ts
 * writeFileSync('big.json', JSON.stringify(bigScenario('items', 10_000_000), null, 1));
 * ```
 */
export function bigScenario(shape: BigScenarioShape, bytes: number): Record<string, unknown> {
  const base = {
    name: `big-${shape}`,
    runtime: {
      endpoints: [
        { id: 'primary', provider: 'openai', model: 'gpt-4o', emulator: 'openai', apiKey: 'sk-emu-big-0001' },
      ],
      chains: { main: ['primary'] },
    },
    emulator: { acceptAnyKey: true, latency: { minMs: 0, maxMs: 0 } },
  };
  if (shape === 'items') {
    const items = 1_000;
    const detail = Math.max(1, Math.floor(bytes / items) - 80);
    return {
      ...base,
      agents: Array.from({ length: 4 }, (_, i) => ({ name: `A${i}`, chain: 'main' })),
      rounds: {
        count: 1,
        items: Array.from({ length: items }, (_, i) => ({
          id: `I${i}`,
          title: `item ${i} ${filler(40, i)}`,
          detail: filler(detail, i),
        })),
      },
    };
  }
  const agents = 200;
  const per = Math.max(1, Math.floor(bytes / agents) - 200);
  return {
    ...base,
    agents: Array.from({ length: agents }, (_, i) => ({
      name: `A${i}`,
      chain: 'main',
      role: filler(Math.floor(per / 2), i),
      memory: Object.fromEntries(
        Array.from({ length: 10 }, (_, j) => [`note${j}`, filler(Math.floor(per / 20), j)]),
      ),
    })),
    rounds: { count: 1, items: Array.from({ length: 5 }, (_, i) => ({ id: `I${i}`, title: `item ${i}` })) },
  };
}
