import type { Context } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import type { Actor } from 'xstate';
import type { AgentContext, AgentEvent, agentMachine } from '../../machines/agent.machine.ts';
import type { ChatMessage } from '../core/engine-types.ts';
import { AgentStoppedError } from '../core/errors/lifecycle-errors.ts';
import { onAbort } from '../clock/abort-fanout.ts';
import type { AgentHandleHooks } from './agent-handle-hooks.ts';
import type { ManagedHandle } from './managed-handle.ts';
import type { ConversationAskOptions } from './one-off-call.ts';
import type { AgentStateName, AskOptions, TurnMeta } from './agent-handle-types.ts';
import type { AgentMemory, Turn } from '../core/turn.ts';
import { type StreamCancel, streamAsk, type TurnStream, type TurnStreamSink } from './turn-stream.ts';
import { unstartedCancelledTurn } from './unstarted-turn.ts';

export type {
  AgentHandle,
  AgentStateChange,
  AgentStateName,
  AskOptions,
  TurnMeta,
} from './agent-handle-types.ts';

type AskEvent = Extract<AgentEvent, { type: 'ASK' }>;

interface PendingAsk {
  readonly turnId: string;
  readonly key: string;
  readonly prompt: string;
  /** A one-off call's conversation (sent instead of `prompt` as one user message). */
  readonly messages?: readonly ChatMessage[];
  /** A streamed turn: where its calls' events go (this ask's own channel). */
  readonly stream?: TurnStreamSink;
  readonly meta: TurnMeta | undefined;
  readonly resolve: (t: Turn) => void;
  /** The OpenTelemetry context where `ask()` was called (the turn span's parent), when tracing is on. */
  readonly trace?: Context | undefined;
  started: boolean;
  settled: boolean;
  offAbort: (() => void) | undefined;
}

/** Forwards an actor's snapshots and its failure to its handle. */
class SnapshotObserver {
  readonly #handle: LlmAgentHandle;
  constructor(handle: LlmAgentHandle) {
    this.#handle = handle;
  }
  next(snap: { status: string; value: unknown; context: unknown }): void {
    this.#handle.onSnapshot(snap);
  }
  error(): void {
    this.#handle.onCrash();
  }
}

function topState(value: unknown): AgentStateName {
  if (typeof value === 'string') return value as AgentStateName;
  if (value && typeof value === 'object') return Object.keys(value)[0] as AgentStateName;
  return 'idle';
}

/**
 * The handle of an LLM agent: its asks in a FIFO (one turn at a time), each of which settles exactly once.
 * While any ask is pending it holds the process open ({@link KeepAlive}).
 *
 * @example
 * ```ts
 * const turn = await handle.ask('Summarize item 3', { signal: AbortSignal.timeout(60_000) });
 * ```
 */
export class LlmAgentHandle implements ManagedHandle {
  readonly name: string;
  readonly tier: string;
  readonly actor: Actor<typeof agentMachine>;
  readonly #o: AgentHandleHooks;
  /** Asks not started yet (allocated on the first one that has to wait). */
  #queue: PendingAsk[] | undefined;
  #current: PendingAsk | undefined;
  #state: AgentStateName;
  #lastTurn: Turn | undefined;
  #stoppedBy: 'agent' | 'supervisor' | undefined;
  #refusing = false;
  #drained: Array<() => void> | undefined;

  constructor(name: string, tier: string, actor: Actor<typeof agentMachine>, hooks: AgentHandleHooks) {
    this.#o = hooks;
    this.name = name;
    this.tier = tier;
    this.actor = actor;
    const first = actor.getSnapshot();
    this.#state = topState(first.value);
    const context = first.context as AgentContext | undefined;
    this.#lastTurn = context?.lastTurn;
    // Restored mid-turn: that turn is the agent's current work; asks wait behind it, and its end starts them.
    if (context?.turn) {
      const t = context.turn;
      hooks.keepAlive.hold();
      this.#current = {
        turnId: t.turnId,
        key: t.key,
        prompt: t.prompt,
        meta: undefined,
        resolve: () => {},
        started: true,
        settled: false,
        offAbort: undefined,
      };
      // Its span starts here (the one it had died with the process that ran it).
      hooks.tracer?.begin(t.turnId, name, tier, undefined, t.prompt);
    }
    // One observer per agent: state changes, and a finished turn (a new `lastTurn` in context). A class with
    // prototype methods, not closures: an idle agent should cost as little as possible.
    actor.subscribe(new SnapshotObserver(this));
  }

  /** A new snapshot of the agent's actor. @internal */
  onSnapshot(snap: { status: string; value: unknown; context: unknown }): void {
    // The state first: settling the turn may start the next ask, whose states must come after this one.
    this.#observe(snap.status === 'stopped' ? 'stopped' : topState(snap.value));
    const last = (snap.context as AgentContext).lastTurn;
    if (last !== this.#lastTurn && last !== undefined) {
      this.#lastTurn = last;
      this.#completed(last);
    }
  }

  /** The agent's machine failed (a bug): the agent is dead; its asks must still settle. @internal */
  onCrash(): void {
    this.#crashed();
  }

  ask(prompt: string, options: AskOptions = {}): Promise<Turn> {
    return this.#enqueue(prompt, options, options.turnId ?? randomUUID(), options.signal, undefined);
  }

  stream(prompt: string, options: AskOptions = {}): TurnStream {
    const turnId = options.turnId ?? randomUUID();
    // The caller's signal cancels through the stream (one listener there); the ask carries the stream's cancel.
    return streamAsk(options.signal, (sink, cancel) =>
      this.#enqueue(prompt, options, turnId, undefined, { sink, cancel }),
    );
  }

  /**
   * Queues one ask. `signal` cancels a plain ask; a streamed one (`streamed`) is cancelled by its stream and its
   * calls stream into the stream's sink (both travel with this ask, never looked up by turn id).
   */
  #enqueue(
    prompt: string,
    options: AskOptions,
    turnId: string,
    signal: AbortSignal | undefined,
    streamed: { readonly sink: TurnStreamSink; readonly cancel: StreamCancel } | undefined,
  ): Promise<Turn> {
    if (this.#stoppedBy || this.#refusing)
      return Promise.reject(new AgentStoppedError(this.name, this.#stoppedBy ?? 'supervisor'));
    if (signal?.aborted || streamed?.cancel.cancelled)
      return Promise.resolve(
        unstartedCancelledTurn(this.name, this.tier, { turnId, prompt }, this.#o.clock.now()),
      );
    const { messages } = options as ConversationAskOptions;
    return new Promise<Turn>((resolve) => {
      const ask: PendingAsk = {
        turnId,
        key: options.key ?? `${this.name}:${turnId}`,
        prompt,
        ...(messages ? { messages } : {}),
        ...(streamed ? { stream: streamed.sink } : {}),
        meta: options.meta,
        resolve,
        trace: this.#o.tracer?.capture(),
        started: false,
        settled: false,
        offAbort: undefined,
      };
      this.#o.keepAlive.hold();
      if (signal) ask.offAbort = onAbort(signal, () => this.#cancel(ask));
      // A streamed turn: its stream cancels it directly (no listener to take off: a settled ask ignores a late
      // cancel).
      else streamed?.cancel.onCancel(() => this.#cancel(ask));
      this.#queue ??= [];
      this.#queue.push(ask);
      this.#startNext();
    });
  }

  /**
   * The channel of the streamed turn this agent runs now, if its id is `turnId` (the engine call, `startCall`, pushes
   * into it). The agent runs one turn at a time, so the running ask is the only one a call can belong to. @internal
   */
  streamSink(turnId: string): TurnStreamSink | undefined {
    const current = this.#current;
    return current?.turnId === turnId ? current.stream : undefined;
  }

  state(): AgentStateName {
    return this.#state;
  }

  memory(): AgentMemory {
    return (this.actor.getSnapshot().context as AgentContext).memory;
  }

  persistedSnapshot(): unknown {
    return this.actor.getPersistedSnapshot();
  }

  setMemory(slots: Readonly<Record<string, string>>): void {
    if (!this.#stoppedBy) this.actor.send({ type: 'MEMORY.SET', slots });
  }

  drain(signal?: AbortSignal): Promise<void> {
    if (this.#idle() || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const off = signal ? onAbort(signal, () => resolve()) : undefined;
      this.#drained ??= [];
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

  stopAs(by: 'agent' | 'supervisor'): void {
    if (this.#stoppedBy) return;
    this.#stoppedBy = by;
    const now = this.#o.clock.now();
    for (const ask of this.#queue?.splice(0) ?? []) this.#settle(ask, this.#unstarted(ask, now));
    const current = this.#current;
    // The machine takes CANCEL in every working state and emits the cancelled turn at once.
    if (current) this.actor.send({ type: 'CANCEL', at: now });
    if (current && !current.settled) this.#settle(current, this.#unstarted(current, now));
    this.#current = undefined;
    this.#o.stopActor(this.actor);
    // CANCEL left the call's state (its exit cut the call); a call of an agent that did not take it is cut here.
    this.#o.leaveCall?.(this.actor);
    // One agent stopped is news (its name is free again); the whole runtime stopping is not, per agent.
    if (by === 'agent') this.#observe('stopped');
    else this.#state = 'stopped';
    this.#o.onStopped(this.name);
    this.#checkDrained();
  }

  cancelAll(): void {
    const now = this.#o.clock.now();
    for (const ask of this.#queue?.splice(0) ?? []) this.#settle(ask, this.#unstarted(ask, now));
    if (this.#current) this.#cancel(this.#current);
  }

  #crashed(): void {
    if (this.#stoppedBy) return;
    this.#stoppedBy = 'agent';
    const now = this.#o.clock.now();
    const ask = this.#current;
    this.#current = undefined;
    // The machine failed in the middle of its work: its states' exits never ran, so its call is cut from here.
    this.#o.leaveCall?.(this.actor);
    if (ask)
      this.#settle(ask, {
        ...unstartedCancelledTurn(this.name, this.tier, ask, now),
        outcome: 'failed',
        error: `internal error in agent ${this.name}: its state machine failed; this is a bug, please report it`,
      });
    for (const queued of this.#queue?.splice(0) ?? []) this.#settle(queued, this.#unstarted(queued, now));
    this.#observe('stopped');
    this.#o.onStopped(this.name);
    this.#checkDrained();
  }

  #startNext(): void {
    if (this.#current || this.#stoppedBy) return;
    const ask = this.#queue?.shift();
    if (!ask) return;
    this.#current = ask;
    ask.started = true;
    this.#o.tracer?.begin(ask.turnId, this.name, this.tier, ask.trace, ask.prompt);
    const event: AskEvent = {
      type: 'ASK',
      turnId: ask.turnId,
      key: ask.key,
      prompt: ask.prompt,
      at: this.#o.clock.now(),
      ...(ask.messages ? { messages: ask.messages } : {}),
      ...(ask.stream ? { stream: true as const } : {}),
    };
    // A token free now: the agent takes the ASK straight into calling (one step, no queued state in between).
    const grantAtOnce = this.#o.grantAtOnce;
    const snap = grantAtOnce ? this.actor.getSnapshot() : undefined;
    const ready = snap && grantAtOnce!(snap.context, snap.value === 'idle', event);
    this.actor.send(ready ? { ...event, ready } : event);
  }

  #cancel(ask: PendingAsk): void {
    if (ask.settled) return;
    if (!ask.started) {
      const i = this.#queue?.indexOf(ask) ?? -1;
      if (i >= 0) this.#queue!.splice(i, 1);
      this.#settle(ask, this.#unstarted(ask, this.#o.clock.now()));
      this.#checkDrained();
      return;
    }
    this.actor.send({ type: 'CANCEL', at: this.#o.clock.now() });
  }

  #completed(turn: Turn): void {
    const ask = this.#current;
    const mine = ask !== undefined && ask.turnId === turn.turnId;
    try {
      this.#o.onTurn(turn, mine ? ask.meta : undefined);
    } finally {
      if (mine) {
        this.#current = undefined;
        this.#settle(ask, turn);
        this.#startNext();
        this.#checkDrained();
      }
    }
  }

  #settle(ask: PendingAsk, turn: Turn): void {
    if (ask.settled) return;
    ask.settled = true;
    // Only a started ask has a span (a queued one settling must not end the running turn's).
    if (ask.started) this.#o.tracer?.end(turn);
    ask.offAbort?.();
    this.#o.keepAlive.release();
    ask.resolve(turn);
  }

  #unstarted(ask: PendingAsk, at: number): Turn {
    return unstartedCancelledTurn(this.name, this.tier, ask, at);
  }

  /**
   * Asks this agent has left, the running one included: they run one after another, so this is the length of the
   * chain of work its token requests stand for (`TokenRequest.workLeft`). @internal
   */
  get asksLeft(): number {
    return (this.#current ? 1 : 0) + (this.#queue?.length ?? 0);
  }

  #idle(): boolean {
    return this.#current === undefined && (this.#queue?.length ?? 0) === 0;
  }

  #checkDrained(): void {
    if (!this.#idle() || !this.#drained?.length) return;
    for (const done of this.#drained.splice(0)) done();
  }

  #observe(next: AgentStateName): void {
    if (next === this.#state) return;
    const previous = this.#state;
    this.#state = next;
    this.#o.onState({ agent: this.name, state: next, previous, at: this.#o.clock.now() });
  }
}
