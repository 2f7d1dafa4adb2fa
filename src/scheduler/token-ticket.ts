import type { TokenDecision, TokenTicket } from './token-scheduler.ts';
import type { Waiter } from './waiter.ts';

/** What a ticket's withdrawal goes through: its scheduler. */
export interface WaiterWithdrawal {
  /** Takes `w` out of the queue and rejects it with `reason`; a no-op once it was decided. */
  withdrawWaiter(w: Waiter, reason: unknown): void;
}

/** A request's handle for its caller (a class: one is made per request, on the hot path). */
export class Ticket implements TokenTicket {
  readonly decision: Promise<TokenDecision>;
  readonly #scheduler: WaiterWithdrawal;
  readonly #waiter: Waiter;
  constructor(scheduler: WaiterWithdrawal, waiter: Waiter, decision: Promise<TokenDecision>) {
    this.#scheduler = scheduler;
    this.#waiter = waiter;
    this.decision = decision;
  }
  withdraw(reason?: unknown): void {
    this.#scheduler.withdrawWaiter(this.#waiter, reason);
  }
}
