/**
 * One system of `bench:goodput` in its own process, so the CPU it spends is its own: argv `<system>` and the
 * bench's flags (`--scaled-time`, `--jitter-seed N`); the result (`SystemRun`) goes as JSON to the file named by
 * `BENCH_GOODPUT_OUT`.
 */
import { writeFile } from 'node:fs/promises';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { runSystem, SYSTEMS, type SystemName } from './goodput-system.ts';

const system = process.argv[2] as SystemName;
if (!SYSTEMS.includes(system)) throw new Error(`unknown system "${system}"; one of ${SYSTEMS.join(', ')}`);
const out = process.env.BENCH_GOODPUT_OUT;
if (!out) throw new Error('BENCH_GOODPUT_OUT names the result file');
const seedAt = process.argv.indexOf('--jitter-seed');
const spec = loadScenario('scenarios/agent8-storm');
const result = await runSystem(spec, system, {
  virtual: !process.argv.includes('--scaled-time'),
  ...(seedAt > 0 ? { jitterSeed: Number(process.argv[seedAt + 1]) } : {}),
});
await writeFile(out, JSON.stringify(result));
