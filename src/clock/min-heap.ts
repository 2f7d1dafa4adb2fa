/**
 * A binary min-heap ordered by `less`. Push and pop are O(log n); `peek` is O(1). The scheduler's waiter
 * queues and the timer heap are built on it (removal is lazy there: entries carry a validity flag).
 *
 * @example
 * ```ts
 * const heap = new MinHeap<{ at: number }>((a, b) => a.at < b.at);
 * heap.push({ at: 5 });
 * heap.push({ at: 1 });
 * heap.pop(); // { at: 1 }
 * ```
 */
export class MinHeap<T> {
  readonly #less: (a: T, b: T) => boolean;
  #items: T[] = [];

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const h = this.#items;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  pop(): T | undefined {
    const h = this.#items;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last !== undefined) {
      h[0] = last;
      this.#siftDown(0);
    }
    return top;
  }

  /** Keeps only the items `keep` accepts and restores the heap order: O(n). */
  retain(keep: (item: T) => boolean): void {
    this.#items = this.#items.filter(keep);
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  /** Removes everything. */
  clear(): void {
    this.#items = [];
  }

  /** The items in no particular order (for views; O(n)). */
  values(): readonly T[] {
    return this.#items;
  }

  #siftDown(start: number): void {
    const h = this.#items;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
