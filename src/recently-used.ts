/**
 * A bounded map that forgets its least recently used entries first, nearly: a read moves its entry
 * to the end only when the entry is in the older half. Moving it on every read (a delete and a set)
 * made V8 build a long-lived map's hash table again each time, in the old generation: garbage for
 * the major GC, and every young object the dead tables pointed at was kept through scavenges
 * (bench/README, twenty-second run). An entry read only while recent can go once it is the oldest.
 */
export class RecentlyUsedMap<K, V> {
  private readonly entries = new Map<K, { value: V; placedAt: number }>();
  /** Entries put at the end so far. */
  private placed = 0;

  /** `limit` 0 or less keeps nothing. */
  constructor(private readonly limit: number) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.placed - entry.placedAt >= this.limit / 2) {
      // Map order is insertion order: inserted again, it is the most recent.
      this.entries.delete(key);
      entry.placedAt = ++this.placed;
      this.entries.set(key, entry);
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.limit <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, placedAt: ++this.placed });
    while (this.entries.size > this.limit) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Every entry, the oldest first (deleting while iterating is allowed). */
  *[Symbol.iterator](): IterableIterator<[K, V]> {
    for (const [key, entry] of this.entries) yield [key, entry.value];
  }
}
