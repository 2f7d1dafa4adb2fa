import type { Snapshot } from 'xstate';
import type { BreakerContext, BreakerEvent } from '../../machines/breaker.machine.ts';
import type { TimerEntry, TimerHeap } from '../clock/timer-heap.ts';
import type { BreakerInput } from '../core/breaker-config.ts';
import { BreakerCell, type BreakerStep } from './breaker-cell.ts';
import type { EndpointHealthHooks } from './endpoint-health-types.ts';
import type { BreakerState } from './endpoint-health-view.ts';

/**
 * The one driver of an endpoint's breaker: every event of its {@link BreakerCell} goes through here, which sends
 * the TICK at `openUntil` from the runtime's timer heap, says each change (`onBreakerChange`), and asks for a
 * HALF-OPEN probe while none is in flight (`onProbeWanted`). Part of the endpoint's `EndpointHealthTracker`,
 * which decides what to send.
 *
 * @example
 * ```ts
 * const breaker = new BreakerDriver('mini', settings.breaker, timers, hooks);
 * breaker.send({ type: 'CALL_FAILED', at: now, kind: 'overloaded' });
 * if (breaker.wantsProbe()) breaker.probeStarted(now);
 * ```
 */
export class BreakerDriver {
  readonly #id: string;
  readonly #input: BreakerInput;
  readonly #timers: TimerHeap;
  readonly #hooks: EndpointHealthHooks;
  #cell: BreakerCell;
  #tick: TimerEntry | undefined;
  #probeInFlight = false;
  #closed = false;

  constructor(id: string, input: BreakerInput, timers: TimerHeap, hooks: EndpointHealthHooks) {
    this.#id = id;
    this.#input = input;
    this.#timers = timers;
    this.#hooks = hooks;
    this.#cell = new BreakerCell(input);
  }

  get state(): BreakerState {
    return this.#cell.state;
  }

  get context(): BreakerContext {
    return this.#cell.context;
  }

  /** The breaker is HALF-OPEN with no probe in flight. */
  wantsProbe(): boolean {
    return !this.#closed && this.#cell.state === 'halfOpen' && !this.#probeInFlight;
  }

  /** A probe got its token and goes now. */
  probeStarted(now: number): void {
    this.#probeInFlight = true;
    this.send({ type: 'PROBE_STARTED', at: now });
  }

  /** The probe in flight ended (its outcome is sent after). */
  probeEnded(): void {
    this.#probeInFlight = false;
  }

  /** A call succeeded: counted without a machine step while it cannot change the breaker (see BreakerCell.succeeded). */
  succeeded(now: number): void {
    const step = this.#cell.succeeded(now);
    if (step) this.#afterStep(step);
  }

  /** Every breaker event goes through here: change hooks, the TICK at `openUntil`, the probe request. */
  send(event: BreakerEvent): void {
    this.#afterStep(this.#cell.send(event));
  }

  /** The breaker's persisted snapshot, to store (see {@link BreakerDriver.restore}). */
  exported(): unknown {
    // The breaker's thresholds come from the settings on restore: only its state travels.
    const persisted = this.#cell.persisted() as { context?: Record<string, unknown> };
    const { config: _config, ...context } = persisted.context ?? {};
    return { ...persisted, context };
  }

  /**
   * Puts back what {@link BreakerDriver.exported} gave: the breaker in its state with its deadline re-armed on the
   * timer heap (a deadline already past moves it on at once), and a probe asked for if it wants one.
   */
  restore(exported: unknown): void {
    const stored = exported as { context?: Record<string, unknown> };
    const config = this.#cell.context.config;
    this.#cell.stop();
    this.#cell = new BreakerCell(this.#input, {
      ...stored,
      context: { ...(stored.context ?? {}), config },
    } as unknown as Snapshot<unknown>);
    const state = this.#cell.state;
    const { openUntil } = this.#cell.context;
    if (state === 'open' && openUntil !== null) {
      this.#tick?.cancel();
      this.#tick = this.#timers.schedule(openUntil, () => this.#onTick());
    }
    if (this.wantsProbe()) this.#hooks.onProbeWanted?.(this.#id);
  }

  /** The endpoint is gone: its timer is dropped, it wants no probes. */
  close(): void {
    this.#closed = true;
    this.#tick?.cancel();
    this.#cell.stop();
  }

  /** What follows a breaker step: the TICK at `openUntil`, change hooks, the probe request. */
  #afterStep(step: BreakerStep): void {
    const { openUntil } = this.#cell.context;
    if (step.state === 'open' && openUntil !== null && this.#tick?.at !== openUntil) {
      this.#tick?.cancel();
      this.#tick = this.#timers.schedule(openUntil, () => this.#onTick());
    }
    if (step.changed)
      this.#hooks.onBreakerChange?.({
        endpointId: this.#id,
        state: step.state,
        previous: step.previous,
        openUntil,
      });
    if (step.changed && this.wantsProbe()) this.#hooks.onProbeWanted?.(this.#id);
  }

  #onTick(): void {
    this.#tick = undefined;
    if (this.#closed) return;
    const at = this.#cell.context.openUntil ?? 0;
    this.send({ type: 'TICK', at });
  }
}
