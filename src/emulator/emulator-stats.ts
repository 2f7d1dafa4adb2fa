import type { CallRecord, EmulatorStats } from './emulator-types.ts';

const RING_SIZE = 100_000;

/** Collects call records (a ring buffer of the last 100 000) and the in-flight high-water mark. */
export class EmulatorStatsCollector {
  #ring: CallRecord[] = [];
  #start = 0;
  #total = 0;
  #seq = 0;
  #inFlight = 0;
  #maxInFlight = 0;
  #byKey: Record<string, number> = {};
  #byModel: Record<string, number> = {};
  #byStatus: Record<string, number> = {};
  #byFlavor: Record<string, number> = {};

  /** A request arrived; returns its sequence number and the in-flight count including it. */
  begin(): { seq: number; inFlight: number } {
    this.#inFlight++;
    if (this.#inFlight > this.#maxInFlight) this.#maxInFlight = this.#inFlight;
    return { seq: ++this.#seq, inFlight: this.#inFlight };
  }

  /** A request left (answered, failed or dropped). */
  end(record: CallRecord): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    this.#total++;
    const bump = (m: Record<string, number>, k: string) => {
      m[k] = (m[k] ?? 0) + 1;
    };
    bump(this.#byKey, record.key);
    bump(this.#byModel, record.model);
    bump(this.#byStatus, String(record.status));
    bump(this.#byFlavor, record.flavor);
    if (this.#ring.length < RING_SIZE) this.#ring.push(record);
    else {
      this.#ring[this.#start] = record;
      this.#start = (this.#start + 1) % RING_SIZE;
    }
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  #held = 0;

  /** A request is now held by a hang or a stall (the stall's headers and first bytes are written); returns the release. */
  hold(): () => void {
    this.#held++;
    let done = false;
    return () => {
      if (!done) {
        done = true;
        this.#held--;
      }
    };
  }

  snapshot(): EmulatorStats {
    const calls = [...this.#ring.slice(this.#start), ...this.#ring.slice(0, this.#start)].map((c) => ({
      ...c,
    }));
    return {
      totalCalls: this.#total,
      calls,
      byKey: { ...this.#byKey },
      byModel: { ...this.#byModel },
      byStatus: { ...this.#byStatus },
      byFlavor: { ...this.#byFlavor },
      maxInFlight: this.#maxInFlight,
      inFlight: this.#inFlight,
      held: this.#held,
    };
  }

  /** Clears records and counters. Requests still in flight keep counting toward the high-water mark. */
  reset(): void {
    this.#ring = [];
    this.#start = 0;
    this.#total = 0;
    this.#byKey = {};
    this.#byModel = {};
    this.#byStatus = {};
    this.#byFlavor = {};
    this.#maxInFlight = this.#inFlight;
  }
}
