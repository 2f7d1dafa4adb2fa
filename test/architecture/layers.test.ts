import { readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Arrow, arrowText, checkLayers, type LayerRules } from './layer-check.ts';

/*
 * The house's floors, read from the imports: a room (a top folder under src/, or machines/, agents/, migrations/)
 * may import rooms on its own floor or below, never above; no file imports itself round a circle; and a
 * statechart imports xstate and the core vocabulary only (so it stays pure: the runtime acts, the machine
 * computes). The floors follow the target layout of ARCHITECTURE-REVIEW.md (P1); where the code said a better
 * cut, the comment beside the room says why.
 */

const ROOT = join(import.meta.dirname, '..', '..');

const FLOORS: Readonly<Record<string, number>> = {
  // Floor 1, vocabulary and primitives: imported by everything, import nothing above.
  // Engine types, faults and their predicates, turns, runtime events, call memo, token usage, seeded random, errors;
  // beyond the review's list: call-abort (an EngineRequest carries its CallAbort) and the breaker's outcome window
  // (plain data of the breaker machine's persisted context, so the machine may import it).
  core: 1,
  clock: 1, // clocks and the time utilities (timer heap, abort fan-out, zoned time)
  config: 1,
  redact: 1,
  logging: 1,
  http: 1, // the local servers' Host check and connection guard: plain node:http helpers, no domain
  // Floor 2, mechanisms: each knows the vocabulary and the mechanisms beside it, never the runtime.
  resilience: 2,
  engines: 2, // with their wire parsing (engines/wire) and fault classification (engines/faults)
  health: 2,
  scheduler: 2,
  coordination: 2,
  store: 2,
  migrations: 2, // the store's schema steps: the store runs them
  degraded: 2,
  byok: 2,
  // The statecharts sit with the mechanisms: health drives the breaker machine, the runtime the agent's. What a
  // machine may import is narrower still (`machineImports` below).
  machines: 2,
  // Floor 3, the runtime: createSupervisor and the agent's actors, standing on every mechanism.
  runtime: 3,
  // Floor 4, adapters and product: built on the runtime, never imported by it.
  observability: 4, // metrics and export adapters; tracing the runtime does itself lives in runtime/tracing
  'ai-sdk': 4,
  scenarios: 4,
  runs: 4, // the round runner, its worker processes (runs/workers) and the seed's old policy (runs/policies)
  planner: 4,
  report: 4,
  live: 4,
  emulator: 4,
  'fault-proxy': 4,
  testing: 4,
  viz: 4,
  cli: 4,
  agents: 4, // the seed agents are definitions for the runtime (scenarios load them)
  entries: 4,
  index: 4,
};

/** Upward arrows still waiting for their move, each `from → to` with why; empty once the floors stack. */
const KNOWN_UPWARD: readonly { readonly arrow: string; readonly why: string }[] = [];

/** File circles still waiting for their move, with why; empty once the last one is cut. */
const KNOWN_CYCLES: readonly { readonly cycle: string; readonly why: string }[] = [];

const PRODUCT: LayerRules = {
  dirs: ['src', 'machines', 'agents', 'migrations'],
  floors: FLOORS,
  machineRooms: ['machines'],
  // `machines` itself: agent.types.ts holds the agent machine's own event and context types.
  machineImports: { packages: ['xstate'], rooms: ['core', 'machines'] },
  allowedUpward: KNOWN_UPWARD.map((k) => k.arrow),
  allowedCycles: KNOWN_CYCLES.map((k) => k.cycle),
};

const list = (arrows: readonly Arrow[]): string[] => arrows.map(arrowText);

describe('the floors of the product', () => {
  const report = checkLayers(ROOT, PRODUCT);

  it('reads every product file, each in a room with a floor, every relative import resolved', () => {
    expect(report.files).toBeGreaterThan(200);
    expect(report.unplaced).toEqual([]);
    expect(list(report.unresolved)).toEqual([]);
  });

  it('has no arrow from a lower floor to a higher one', () => {
    expect(list(report.upward)).toEqual([]);
    // An allow-listed arrow that is gone must leave the list, so the list only ever shrinks.
    expect(report.staleAllowed).toEqual([]);
  });

  it('has no circle of file imports', () => {
    expect(report.cycles.map((c) => c.join(' ↔ '))).toEqual([]);
    expect(report.staleCycles).toEqual([]);
  });

  it('has machines that import xstate and the core vocabulary only', () => {
    expect(list(report.machineViolations)).toEqual([]);
  });
});

describe('the checker, on a fixture tree with one upward arrow, one circle and one impure machine', () => {
  const report = checkLayers(join(import.meta.dirname, 'fixtures', 'tree'), {
    ...PRODUCT,
    allowedUpward: [],
    allowedCycles: [],
  });

  it('reports the upward arrow, file to file', () => {
    expect(list(report.upward)).toEqual(['src/core/vocabulary.ts → src/runtime/runtime.ts']);
  });

  it('reports the circle', () => {
    expect(report.cycles).toEqual([['src/engines/left.ts', 'src/engines/right.ts']]);
  });

  it("reports the machine's import outside xstate and core, and only that one", () => {
    expect(list(report.machineViolations)).toEqual(['machines/fixture.machine.ts → src/engines/left.ts']);
  });

  it('reports an allow-listed arrow that no longer exists, and does not report one that does', () => {
    const listed = checkLayers(join(import.meta.dirname, 'fixtures', 'tree'), {
      ...PRODUCT,
      allowedUpward: [
        'src/core/vocabulary.ts → src/runtime/runtime.ts',
        'src/core/gone.ts → src/runtime/x.ts',
      ],
    });
    expect(list(listed.upward)).toEqual([]);
    expect(listed.staleAllowed).toEqual(['src/core/gone.ts → src/runtime/x.ts']);
  });
});

describe('barrels', () => {
  it('only the package entries re-export: every index.ts under src/ is one of package.json exports', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, string | { default: string }>;
    };
    const entries = new Set(
      Object.values(pkg.exports)
        .map((e) => (typeof e === 'string' ? e : e.default))
        .map((p) => p.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')),
    );
    const indexes = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[])
      .map((f) => `src/${f.split(sep).join('/')}`)
      .filter((f) => f.endsWith('/index.ts'));
    expect(indexes.length).toBeGreaterThan(0);
    expect(indexes.filter((f) => !entries.has(f))).toEqual([]);
  });
});
