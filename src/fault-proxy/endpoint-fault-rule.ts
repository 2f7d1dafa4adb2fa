import { z } from 'zod';
import { EMULATOR_FAULT_KINDS, type EmulatorFaultKind } from '../emulator/emulator-types.ts';

/**
 * A fault rule aimed at one endpoint by id, whatever serves it: the emulator, a local server or a real
 * provider. A local fault proxy in front of the endpoint's `baseURL` acts it out (see
 * {@link startFaultProxy}); calls it does not fault go through to the real server untouched.
 *
 * @example
 * ```ts
 * const rule: EndpointFaultRule = { endpoint: 'backup-claude', kind: 'overloaded', count: 3 };
 * ```
 */
export interface EndpointFaultRule {
  /** Id of the endpoint (`runtime.endpoints[].id`) whose calls the rule applies to. Required. */
  readonly endpoint: string;
  /** Stable id; generated when absent. */
  readonly id?: string;
  /**
   * What happens: any emulator fault kind but `connection_refused` (a proxy that refuses is no proxy:
   * use `connection_reset`) and the emulator's mid-stream cuts (`stream_cut`, `stream_stall`, `stream_truncated`,
   * `stream_no_usage`: the emulator's own). HTTP errors are rendered in the endpoint's own wire format.
   */
  readonly kind: Exclude<EmulatorFaultKind, 'connection_refused' | ProxylessStreamFault>;
  /** Only calls for this model. Default: any. */
  readonly match?: { readonly model?: string };
  /** Chance to fire on a matching call, 0..1, from a seeded generator. Default 1. */
  readonly probability?: number;
  /** Active only inside this window, ms of the run's clock since the run started. Default: always. */
  readonly window?: { readonly fromMs?: number; readonly toMs?: number };
  /** Fire at most this many times. Default: unlimited. */
  readonly count?: number;
  /** The wait the error asks for (`rate_limit`, `overloaded`), ms. Default 1000. */
  readonly retryAfterMs?: number;
  /** Overrides the provider's error message. Default: the provider's own text. */
  readonly message?: string;
}

/** The emulator's mid-stream faults a proxy does not act out. */
type ProxylessStreamFault = 'stream_cut' | 'stream_stall' | 'stream_truncated' | 'stream_no_usage';
const PROXYLESS: ReadonlySet<EmulatorFaultKind> = new Set<ProxylessStreamFault>([
  'stream_cut',
  'stream_stall',
  'stream_truncated',
  'stream_no_usage',
]);

/**
 * Fault kinds a proxy can act out: every emulator kind but `connection_refused` and the emulator's own mid-stream
 * cuts.
 *
 * @example
 * ```ts
 * PROXY_FAULT_KINDS.includes('stall_after_headers'); // true
 * ```
 */
export const PROXY_FAULT_KINDS: readonly EndpointFaultRule['kind'][] = Object.freeze(
  EMULATOR_FAULT_KINDS.filter(
    (k): k is EndpointFaultRule['kind'] => k !== 'connection_refused' && !PROXYLESS.has(k),
  ),
);

const nonNegative = z.number().nonnegative().optional();

/**
 * The zod schema of an {@link EndpointFaultRule} (a scenario's top-level `faults:` entries). Unknown
 * fields are refused.
 *
 * @example
 * ```ts
 * endpointFaultRuleSchema.parse({ endpoint: 'primary', kind: 'rate_limit', retryAfterMs: 7000, count: 2 });
 * ```
 */
export const endpointFaultRuleSchema = z
  .strictObject({
    endpoint: z.string().min(1),
    id: z.string().min(1).optional(),
    // A custom issue (not an enum's), so the scenario loader prints this very message with the line.
    kind: z.string().superRefine((kind, ctx) => {
      if ((PROXY_FAULT_KINDS as readonly string[]).includes(kind)) return;
      ctx.addIssue({
        code: 'custom',
        message:
          kind === 'connection_refused'
            ? 'connection_refused cannot be acted out by the fault proxy (it must accept a call to forward it); use connection_reset'
            : `must be one of ${PROXY_FAULT_KINDS.join(', ')}`,
      });
    }),
    match: z.strictObject({ model: z.string().min(1).optional() }).optional(),
    probability: z.number().min(0).max(1).optional(),
    window: z.strictObject({ fromMs: nonNegative, toMs: nonNegative }).optional(),
    count: z.number().int().positive().optional(),
    retryAfterMs: nonNegative,
    message: z.string().optional(),
  })
  .superRefine((rule, ctx) => {
    const w = rule.window;
    if (w?.fromMs !== undefined && w.toMs !== undefined && w.toMs <= w.fromMs)
      ctx.addIssue({
        code: 'custom',
        path: ['window', 'toMs'],
        message: 'must be greater than window.fromMs',
      });
  });
