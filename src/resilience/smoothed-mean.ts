/**
 * An exponentially weighted moving average: each new sample moves the mean `weight` of the way towards it; the first
 * sample is the mean. O(1) per sample, no history kept.
 *
 * @example
 * ```ts
 * const latency = new SmoothedMean(0.2);
 * latency.add(900);
 * latency.add(1_400);
 * latency.value; // 1 000
 * ```
 */
export class SmoothedMean {
  readonly #weight: number;
  #value: number | undefined;

  /** `weight`: of a new sample, in (0, 1]. */
  constructor(weight: number) {
    this.#weight = weight;
  }

  /** The mean so far; undefined before the first sample. */
  get value(): number | undefined {
    return this.#value;
  }

  add(sample: number): void {
    const v = this.#value;
    this.#value = v === undefined ? sample : v + this.#weight * (sample - v);
  }
}
