import type { EmulatorFaultKind, EmulatorFlavor, FaultRule } from './emulator-types.ts';
import type { SeededRandom } from '../core/seeded-random.ts';

/**
 * The active fault rules: which one (if any) fires for a call. Rules are tried in insertion
 * order; the first that matches, is inside its window, has count left and wins its
 * probability draw fires.
 */

/** What a rule is matched against. */
export interface FaultCall {
  flavor: EmulatorFlavor;
  /** Alias or fingerprint. */
  keyIdentity: string;
  /** The plaintext key, only for matching (never stored). */
  keyPlain: string | undefined;
  keyFingerprint: string;
  model: string;
  stream: boolean;
  /** Emulated ms since start. */
  at: number;
}

interface ActiveRule {
  rule: FaultRule & { id: string };
  fired: number;
}

const inWindow = (rule: FaultRule, at: number): boolean =>
  (rule.window?.fromMs === undefined || at >= rule.window.fromMs) &&
  (rule.window?.toMs === undefined || at < rule.window.toMs);

export class FaultRules {
  readonly #rules: ActiveRule[] = [];
  readonly #rng: SeededRandom;
  #nextId = 1;

  constructor(rng: SeededRandom) {
    this.#rng = rng;
  }

  /** Adds a (validated) rule; returns its id. A rule with an id already present replaces it. */
  add(rule: FaultRule): string {
    const id = rule.id ?? `fault-${this.#nextId++}`;
    const existing = this.#rules.findIndex((r) => r.rule.id === id);
    const active: ActiveRule = { rule: { ...rule, id }, fired: 0 };
    if (existing >= 0) this.#rules[existing] = active;
    else this.#rules.push(active);
    return id;
  }

  /** Removes a rule; false when no rule had that id. */
  remove(id: string): boolean {
    const i = this.#rules.findIndex((r) => r.rule.id === id);
    if (i < 0) return false;
    this.#rules.splice(i, 1);
    return true;
  }

  clear(): void {
    this.#rules.length = 0;
  }

  resetCounters(): void {
    for (const r of this.#rules) r.fired = 0;
  }

  list(): FaultRule[] {
    return this.#rules.map((r) => ({ ...r.rule }));
  }

  /** The rule that fires for this call, counting it as fired. */
  pick(call: FaultCall): (FaultRule & { id: string }) | undefined {
    for (const active of this.#rules) {
      const { rule } = active;
      if (rule.kind === 'connection_refused') continue;
      if (!call.stream && rule.kind.startsWith('stream_')) continue;
      const m = rule.match;
      if (m?.flavor && m.flavor !== call.flavor) continue;
      if (m?.model && m.model !== call.model) continue;
      if (m?.key && m.key !== call.keyIdentity && m.key !== call.keyPlain && m.key !== call.keyFingerprint)
        continue;
      if (!inWindow(rule, call.at)) continue;
      if (rule.count !== undefined && active.fired >= rule.count) continue;
      // Draw only for real chances, so adding a certain rule does not shift the seeded sequence.
      if (rule.probability !== undefined && rule.probability < 1 && this.#rng.next() >= rule.probability)
        continue;
      active.fired++;
      return rule;
    }
    return undefined;
  }

  /** Flavors whose listener must be closed at emulated time `at` (connection_refused rules). */
  refusedFlavors(at: number): Set<EmulatorFlavor | 'all'> {
    const out = new Set<EmulatorFlavor | 'all'>();
    for (const { rule } of this.#rules) {
      if (rule.kind === 'connection_refused' && inWindow(rule, at)) out.add(rule.match?.flavor ?? 'all');
    }
    return out;
  }

  /** The next emulated time after `at` at which a connection_refused window opens or closes. */
  nextRefusalBoundary(at: number): number | undefined {
    let next: number | undefined;
    for (const { rule } of this.#rules) {
      if (rule.kind !== 'connection_refused') continue;
      for (const t of [rule.window?.fromMs, rule.window?.toMs]) {
        if (t !== undefined && t > at && (next === undefined || t < next)) next = t;
      }
    }
    return next;
  }
}

/** Kinds answered with an HTTP error body (the rest act on the connection or the stream). */
export const HTTP_ERROR_FAULTS: ReadonlySet<EmulatorFaultKind> = new Set([
  'rate_limit',
  'rate_limit_no_retry_after',
  'spend_limit',
  'overloaded',
  'server_busy',
  'server_error_empty',
  'gateway_timeout',
  'html_502',
  'bad_key',
  'credit_exhausted',
]);
