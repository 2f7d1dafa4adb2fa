/**
 * Credit per key identity (alias or fingerprint), in tokens. `null` = unlimited.
 * A key whose balance is ≤ 0 gets the provider's credit error until credit is set again.
 */
export class CreditLedger {
  readonly #balances = new Map<string, number | null>();

  set(identity: string, tokens: number | null): void {
    this.#balances.set(identity, tokens);
  }

  /** The balance, or `null` when unlimited. */
  balance(identity: string): number | null {
    return this.#balances.get(identity) ?? null;
  }

  isExhausted(identity: string): boolean {
    const b = this.balance(identity);
    return b !== null && b <= 0;
  }

  spend(identity: string, tokens: number): void {
    const b = this.balance(identity);
    if (b !== null) this.#balances.set(identity, b - tokens);
  }
}
