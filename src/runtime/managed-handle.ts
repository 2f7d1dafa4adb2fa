import type { AgentHandle } from './agent-handle-types.ts';

/** What the supervisor needs of every handle it owns (beyond the public {@link AgentHandle}). */
export interface ManagedHandle extends AgentHandle {
  /** New asks reject with `AgentStoppedError` (the supervisor is stopping); pending ones go on. */
  refuseAsks(): void;
  /** Settles every pending ask `cancelled` (a call in flight is aborted); the agent keeps running. */
  cancelAll(): void;
  /** Stops the agent; `by` says who (for the error later asks get). */
  stopAs(by: 'agent' | 'supervisor'): void;
}
