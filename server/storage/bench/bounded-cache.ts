/**
 * A map that keeps at most `maxEntries` values, forgetting the least recently set first: for
 * values the store may keep because their rows never change (decision 0600), bounded so that a
 * long-running replica's memory does not grow with every agent or firmware it ever saw.
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly maxEntries: number) {
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new RangeError(`a cache keeps at least one entry; got ${maxEntries}`);
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    // A Map iterates in insertion order: its first key is the one set longest ago.
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
  }

  get size(): number {
    return this.entries.size;
  }
}
