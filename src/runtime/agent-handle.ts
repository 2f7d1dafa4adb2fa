import { randomUUID } from 'node:crypto';
import type { AnyActorRef } from 'xstate';
import type { AgentContext, AgentEmitted } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { NoAgentDefinition } from './agent-definition.ts';
import type { AgentStateChange, AgentStateName } from './create-supervisor.ts';
import type { AgentMemory, Turn } from './turn.ts';

/** Options of {@link AgentHandle.ask}. */
export interface AskOptions {
  /** Cancels the turn: the call in flight is aborted, the token released; the turn ends `cancelled`. */
  readonly signal?: AbortSignal;
  /** Id of the turn. Default: a random UUID. */
  readonly turnId?: string;
  /** Prefix of the turn's idempotency keys (the round runner uses run:round:item:agent). Default `<agent>:<turnId>`. */
  readonly key?: string;
  /** Where the turn belongs (round, agenda item); carried on its `turn.completed` event. Default none. */
  readonly meta?: TurnMeta;
}

/** Where a turn belongs in a run. */
export interface TurnMeta {
  readonly round?: number;
  readonly itemId?: string;
}

/** A running agent, as the embedding program sees it. */
export interface AgentHandle {
  readonly name: string;
  readonly tier: string;
  /**
   * Gives the agent one piece of work and resolves with the finished turn: the answer, the endpoint used,
   * whether it is degraded, the faults met and the wait. Never rejects for an upstream fault: a fault no
   * engine swap can fix gives a turn with outcome `failed` and an `error`. Asks to one agent run one at a time.
   */
  ask(prompt: string, options?: AskOptions): Promise<Turn>;
  state(): AgentStateName;
  /** The agent's working memory (utterances, slots, tool results): plain JSON. */
  memory(): AgentMemory;
  /** XState persisted snapshot of the agent actor (for the durable store). */
  persistedSnapshot(): unknown;
  /** Sets memory slots (merged). */
  setMemory(slots: Readonly<Record<string, string>>): void;
  /** Resolves when the turns asked so far have finished. */
  drain(signal?: AbortSignal): Promise<void>;
  stop(): void;
}

function topState(value: unknown): AgentStateName {
  if (typeof value === 'string') return value as AgentStateName;
  if (value && typeof value === 'object') return Object.keys(value)[0] as AgentStateName;
  return 'idle';
}

/** Wraps an agent actor ref in the public handle. */
export function createAgentHandle(opts: {
  name: string;
  tier: string;
  ref: AnyActorRef;
  clock: Clock;
  onState: (c: AgentStateChange) => void;
  onTurn: (t: Turn, meta: TurnMeta | undefined) => void;
  stop: () => void;
}): AgentHandle {
  const metas = new Map<string, TurnMeta>();
  const { ref, clock, name } = opts;
  let tail: Promise<unknown> = Promise.resolve();
  let current: AgentStateName = topState(ref.getSnapshot().value);
  let stopped = false;
  ref.subscribe((snap: { value: unknown; status: string }) => {
    const next: AgentStateName = snap.status === 'stopped' ? 'stopped' : topState(snap.value);
    if (next !== current) {
      const previous = current;
      current = next;
      opts.onState({ agent: name, state: next, previous, at: clock.now() });
    }
  });
  ref.on('turn.completed', (e: AgentEmitted) => {
    const meta = metas.get(e.turn.turnId);
    metas.delete(e.turn.turnId);
    opts.onTurn(e.turn, meta);
  });

  const askNow = (prompt: string, o: AskOptions): Promise<Turn> =>
    new Promise<Turn>((resolve, reject) => {
      if (stopped) return reject(new Error(`agent ${name} is stopped`));
      const turnId = o.turnId ?? randomUUID();
      const key = o.key ?? `${name}:${turnId}`;
      if (o.meta) metas.set(turnId, o.meta);
      const onAbort = () => ref.send({ type: 'CANCEL', at: clock.now() });
      const sub = ref.on('turn.completed', (e: AgentEmitted) => {
        if (e.turn.turnId !== turnId) return;
        sub.unsubscribe();
        o.signal?.removeEventListener('abort', onAbort);
        resolve(e.turn);
      });
      o.signal?.addEventListener('abort', onAbort, { once: true });
      ref.send({ type: 'ASK', turnId, key, prompt, at: clock.now() });
      if (o.signal?.aborted) onAbort();
    });

  return {
    name,
    tier: opts.tier,
    ask(prompt, o = {}) {
      const run = tail.then(() => askNow(prompt, o));
      tail = run.catch(() => {});
      return run;
    },
    state: () => current,
    memory: () => (ref.getSnapshot().context as AgentContext).memory,
    persistedSnapshot: () => ref.getPersistedSnapshot?.(),
    setMemory: (slots) => ref.send({ type: 'MEMORY.SET', slots }),
    async drain(signal) {
      // An already aborted signal fires no 'abort' event: check it, or a stuck turn would hold stop() forever.
      if (signal?.aborted) return;
      await Promise.race([
        tail,
        new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
      ]);
    },
    stop() {
      stopped = true;
      opts.stop();
    },
  };
}

/** A handle for plain-code work: runs `definition.run`, takes no token, never calls an engine. */
export function createNoAgentHandle(
  definition: NoAgentDefinition,
  tier: string,
  clock: Clock,
  onTurn: (t: Turn, meta: TurnMeta | undefined) => void = () => {},
): AgentHandle {
  let tail: Promise<unknown> = Promise.resolve();
  let running = false;
  const memory: AgentMemory = { utterances: [], slots: {}, toolResults: [] };
  const runNow = async (prompt: string, o: AskOptions): Promise<Turn> => {
    const turn = await runPlain(prompt, o);
    onTurn(turn, o.meta);
    return turn;
  };
  const runPlain = async (prompt: string, o: AskOptions): Promise<Turn> => {
    const turnId = o.turnId ?? randomUUID();
    const startedAt = clock.now();
    running = true;
    try {
      const value = await definition.run(prompt, { signal: o.signal ?? new AbortController().signal });
      const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
      return base(turnId, prompt, startedAt, 'no_agent', { text });
    } catch (e) {
      const error = scrubSecrets(e instanceof Error ? e.message : String(e));
      return {
        ...base(turnId, prompt, startedAt, 'failed', { text: '' }),
        error: `no_agent work failed: ${error}`,
      };
    } finally {
      running = false;
    }
  };
  const base = (
    turnId: string,
    prompt: string,
    startedAt: number,
    outcome: Turn['outcome'],
    answer: Turn['answer'],
  ): Turn => ({
    turnId,
    agent: definition.name,
    tier,
    prompt,
    answer,
    outcome,
    degraded: false,
    faults: [],
    waitMs: 0,
    attempts: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    messages: [],
    startedAt,
    finishedAt: clock.now(),
  });
  return {
    name: definition.name,
    tier,
    ask(prompt, o = {}) {
      const run = tail.then(() => runNow(prompt, o));
      tail = run.catch(() => {});
      return run;
    },
    state: () => (running ? 'calling' : 'idle'),
    memory: () => memory,
    persistedSnapshot: () => undefined,
    setMemory: () => {},
    async drain() {
      await tail;
    },
    stop() {},
  };
}
