import type { Clock } from '../clock/clock.ts';
import type { AgentInfo } from '../core/runtime-event.ts';
import { type Emulator, startEmulator } from '../emulator/emulator-server.ts';
import { unreachableEmulator } from '../core/errors/network-cause.ts';
import { redactUrl } from '../redact/secret-scrubber.ts';
import { proxyFaultedEndpoints } from '../fault-proxy/endpoint-fault-proxies.ts';
import { type AgentDefinition, isNoAgentDefinition } from '../runtime/agent-definition.ts';
import { scenarioRuntimeConfig } from '../scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../scenarios/scenario-tools.ts';
import type { ScenarioSpec } from '../scenarios/scenario-types.ts';
import { type WireTimeEngines, wireTimeEngines } from './wire-time-engines.ts';

/** A run's endpoints as they are called: the scenario with real base URLs and fault proxies, and its agents. */
export interface RunEndpoints {
  /** The scenario with every endpoint's URL resolved (the emulator's, or the proxy in front of it). */
  readonly resolved: ScenarioSpec;
  readonly wire: WireTimeEngines;
  readonly definitions: AgentDefinition[];
  readonly agents: AgentInfo[];
}

/** What the endpoints start that the run must close when it ends, the first to close first. */
export interface RunEndpointsOwner {
  emulatorStarted(emulator: Emulator): void;
  proxiesStarted(proxies: readonly { close(): Promise<void> }[]): void;
}

/**
 * Starts what the scenario's endpoints need on the run's clock: the emulator (in process, or one given by URL),
 * the engines' reading of the wire, and a local proxy in front of each endpoint a fault rule aims at.
 */
export async function wireRunEndpoints(
  spec: ScenarioSpec,
  options: { readonly emulatorUrl?: string; readonly virtualTime?: boolean },
  clock: Clock,
  timeScale: number,
  owner: RunEndpointsOwner,
): Promise<RunEndpoints> {
  // On a virtual clock the emulator's wall-clock instants (Anthropic's reset headers) and the engines' reading
  // of them use simulated time: read against the real wall, the real ms a response spent in transit would shift
  // every reset by as many simulated ms, and the timeline would depend on the machine's load.
  const wallNow = options.virtualTime && !options.emulatorUrl ? () => clock.now() : undefined;
  // Endpoints outside the emulator live in wall time; both policies' engines read the wire the same way (the
  // status-quo worker too: its comparison is only fair on the same clock).
  const wire = wireTimeEngines(spec.runtime, {
    clock,
    timeScale,
    // An emulator given by URL runs on its own wall clock: its waits are real ms, like a real server's.
    emulatorOnRunClock: !options.emulatorUrl,
    ...(options.virtualTime ? { virtualTime: true } : {}),
    ...(wallNow ? { wallNow } : {}),
  });
  const baseURLs = await emulatorBaseURLs(spec, options, clock, (e) => owner.emulatorStarted(e), wallNow);
  const runtime = scenarioRuntimeConfig(spec, {
    baseURL: (flavor) => {
      const url = baseURLs[flavor];
      if (!url) throw new Error(`the emulator does not serve flavor "${flavor}"`);
      return url;
    },
  });
  // Fault rules aimed at endpoints by id: a local proxy in front of each one acts them out.
  // A proxy in front of a wall-time endpoint writes its rules' simulated waits as real ms (the engine scales them
  // back); one in front of the emulator writes them on the run's clock, as the emulator does.
  const faulted = await proxyFaultedEndpoints(runtime.endpoints, spec.faults ?? [], {
    clock,
    ...(spec.emulator?.seed !== undefined ? { seed: spec.emulator.seed } : {}),
    wireScale: wire.wireScaleOf,
  });
  owner.proxiesStarted(faulted.proxies);
  const resolved: ScenarioSpec = {
    ...spec,
    runtime: { ...runtime, endpoints: faulted.endpoints } as ScenarioSpec['runtime'],
  };
  const definitions = scenarioAgents(resolved);
  const agents: AgentInfo[] = definitions.map((d) => ({
    name: d.name,
    tier: d.tier ?? resolved.runtime.tiers?.[resolved.runtime.tiers.length - 1] ?? 'ops',
    ...(isNoAgentDefinition(d) ? { noAgent: true } : { chain: d.chain }),
  }));
  return { resolved, wire, definitions, agents };
}

/**
 * The base URL of every emulator flavor the scenario's endpoints name (in-process, or an external emulator).
 *
 * @example
 * ```ts
 * const urls = await emulatorBaseURLs(spec, { emulatorUrl }, clock, () => {});
 * ```
 */
export async function emulatorBaseURLs(
  spec: ScenarioSpec,
  options: { readonly emulatorUrl?: string | undefined },
  clock: Clock,
  started: (e: Emulator) => void,
  wallNow?: () => number,
): Promise<Record<string, string>> {
  const templates = Object.values(
    (spec.runtime as { byok?: { templates?: Record<string, { emulator?: string }> } }).byok?.templates ?? {},
  );
  const needs = spec.runtime.endpoints.some((e) => e.emulator) || templates.some((t) => t.emulator);
  if (!needs) return {};
  if (options.emulatorUrl) {
    let res: Response;
    try {
      res = await fetch(new URL('/_emulator/urls', options.emulatorUrl), {
        signal: AbortSignal.timeout(5_000),
      });
    } catch (e) {
      throw unreachableEmulator(options.emulatorUrl, e);
    }
    if (!res.ok)
      throw new Error(
        `the emulator at ${redactUrl(options.emulatorUrl)} did not answer /_emulator/urls (${res.status})`,
      );
    return ((await res.json()) as { baseURLs: Record<string, string> }).baseURLs;
  }
  // The emulator shares the run's scaled clock, so its own time scale stays 1.
  const emulator = await startEmulator({
    profile: { ...(spec.emulator ?? {}), timeScale: 1 },
    clock,
    ...(wallNow ? { wallNow } : {}),
  });
  started(emulator);
  return emulator.baseURLs();
}
