import { randomUUID } from 'node:crypto';
import { streamAsk, type TurnStream } from './turn-stream.ts';
import type { Clock } from '../clock/clock.ts';
import { NO_USAGE } from '../core/token-usage.ts';
import { AgentStoppedError } from '../core/errors/lifecycle-errors.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { onAbort } from '../clock/abort-fanout.ts';
import type { NoAgentDefinition } from './agent-definition.ts';
import type { AgentStateName, AskOptions, TurnMeta } from './agent-handle-types.ts';
import type { ManagedHandle } from './managed-handle.ts';
import { unstartedCancelledTurn } from './unstarted-turn.ts';
import type { KeepAlive } from './keep-alive.ts';
import type { AgentMemory, Turn } from '../core/turn.ts';

/** What a `no_agent` handle is built from. */
export interface NoAgentHandleOptions {
  readonly definition: NoAgentDefinition;
  readonly tier: string;
  readonly clock: Clock;
  readonly keepAlive: KeepAlive;
  readonly onTurn?: (t: Turn, meta: TurnMeta | undefined) => void;
  readonly onStopped?: (name: string) => void;
}

/**
 * A handle for plain-code work (`no_agent`): runs `definition.run`, takes no token, never calls an engine. Its
 * asks run one at a time and settle exactly once; `stop()` aborts the running one's signal and settles every
 * pending ask `cancelled`.
 *
 * @example
 * ```ts
 * const flush = new NoAgentHandle({ definition: { name: 'flusher', noAgent: true, run: flushQueues }, tier: 'ops', clock, keepAlive });
 * await flush.ask('flush');
 * ```
 */
export class NoAgentHandle implements ManagedHandle {
  readonly name: string;
  readonly tier: string;
  readonly #o: NoAgentHandleOptions;
  readonly #memory: AgentMemory = { utterances: [], slots: {}, toolResults: [] };
  #tail: Promise<unknown> = Promise.resolve();
  #running: AbortController | undefined;
  readonly #pending = new Map<(t: Turn) => void, { turnId: string; prompt: string }>();
  readonly #drained: Array<() => void> = [];
  #stopped: 'agent' | 'supervisor' | undefined;
  #refusing = false;

  constructor(options: NoAgentHandleOptions) {
    this.#o = options;
    this.name = options.definition.name;
    this.tier = options.tier;
  }

  ask(prompt: string, options: AskOptions = {}): Promise<Turn> {
    if (this.#stopped || this.#refusing)
      return Promise.reject(new AgentStoppedError(this.name, this.#stopped ?? 'supervisor'));
    const turnId = options.turnId ?? randomUUID();
    const cancelled = () =>
      unstartedCancelledTurn(this.name, this.tier, { turnId, prompt }, this.#o.clock.now());
    if (options.signal?.aborted) return Promise.resolve(cancelled());
    this.#o.keepAlive.hold();
    let settled = false;
    let settle!: (t: Turn) => void;
    const result = new Promise<Turn>((resolve) => {
      settle = (t: Turn) => {
        if (settled) return;
        settled = true;
        this.#pending.delete(settle);
        off?.();
        this.#o.keepAlive.release();
        resolve(t);
        if (this.#pending.size === 0) for (const done of this.#drained.splice(0)) done();
      };
    });
    this.#pending.set(settle, { turnId, prompt });
    const off = options.signal ? onAbort(options.signal, () => settle(cancelled())) : undefined;
    const run = this.#tail.then(async () => {
      if (settled) return;
      const controller = new AbortController();
      const stopRun = options.signal ? onAbort(options.signal, () => controller.abort()) : undefined;
      this.#running = controller;
      try {
        const turn = await this.#runPlain(prompt, turnId, controller.signal);
        if (!settled) this.#o.onTurn?.(turn, options.meta);
        settle(turn);
      } finally {
        stopRun?.();
        this.#running = undefined;
      }
    });
    this.#tail = run.catch(() => {});
    return result;
  }

  stream(prompt: string, options: AskOptions = {}): TurnStream {
    // Plain code has no deltas: the stream is its `done` event.
    const turnId = options.turnId ?? randomUUID();
    return streamAsk(options.signal, (_sink, cancel) =>
      this.ask(prompt, { ...options, turnId, signal: cancel.signal }),
    );
  }

  state(): AgentStateName {
    if (this.#stopped) return 'stopped';
    return this.#running ? 'calling' : 'idle';
  }

  memory(): AgentMemory {
    return this.#memory;
  }

  persistedSnapshot(): unknown {
    return undefined;
  }

  setMemory(): void {}

  /** Resolves once every ask given has settled (a job that ignores its signal does not hold this), or on abort. */
  drain(signal?: AbortSignal): Promise<void> {
    if (this.#pending.size === 0 || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const off = signal ? onAbort(signal, resolve) : undefined;
      this.#drained.push(() => {
        off?.();
        resolve();
      });
    });
  }

  stop(): void {
    this.stopAs('agent');
  }

  refuseAsks(): void {
    this.#refusing = true;
  }

  cancelAll(): void {
    this.#running?.abort();
    const now = this.#o.clock.now();
    for (const [settle, ask] of [...this.#pending])
      settle(unstartedCancelledTurn(this.name, this.tier, ask, now));
  }

  stopAs(by: 'agent' | 'supervisor'): void {
    if (this.#stopped) return;
    this.#stopped = by;
    this.cancelAll();
    this.#o.onStopped?.(this.name);
  }

  async #runPlain(prompt: string, turnId: string, signal: AbortSignal): Promise<Turn> {
    const startedAt = this.#o.clock.now();
    const base = (outcome: Turn['outcome'], text: string): Turn => ({
      turnId,
      agent: this.name,
      tier: this.tier,
      prompt,
      answer: { text },
      outcome,
      degraded: false,
      faults: [],
      waitMs: 0,
      attempts: 0,
      usage: NO_USAGE,
      messages: [],
      startedAt,
      finishedAt: this.#o.clock.now(),
    });
    try {
      const value = await this.#o.definition.run(prompt, { signal });
      return base('no_agent', typeof value === 'string' ? value : JSON.stringify(value ?? null));
    } catch (e) {
      const error = scrubSecrets(e instanceof Error ? e.message : String(e));
      return { ...base('failed', ''), error: `no_agent work failed: ${error}` };
    }
  }
}
