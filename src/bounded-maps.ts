/** Maps that keep at most `limit` entries: the oldest goes first (BoundedMap), or nearly the least recently used (RecentlyUsedMap). */

/** An insertion-ordered map that forgets its oldest entries beyond `limit` (a set moves its entry to the end; a read does not). */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();
  /** `limit` 0 or less keeps nothing. */
  constructor(private readonly limit: number) {}
  get(key: K): V | undefined {
    return this.map.get(key);
  }
  has(key: K): boolean {
    return this.map.has(key);
  }
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.limit) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.map.delete(oldest.value);
    }
  }
  delete(key: K): void {
    this.map.delete(key);
  }
  clear(): void {
    this.map.clear();
  }
  get size(): number {
    return this.map.size;
  }
  /** Entries from the least recently set (deleting while iterating is allowed). */
  oldestFirst(): IterableIterator<[K, V]> {
    return this.map.entries();
  }
}

/**
 * A bounded map that forgets its least recently used entries first, nearly: a read moves its entry
 * to the end only when the entry is in the older half. Moving it on every read (a delete and a set)
 * made V8 build a long-lived map's hash table again each time, in the old generation: garbage for
 * the major GC, and every young object the dead tables pointed at was kept through scavenges
 * (bench/README, twenty-second run). An entry read only while recent can go once it is the oldest.
 */
export class RecentlyUsedMap<K, V> {
  private readonly entries: BoundedMap<K, { value: V; placedAt: number }>;
  /** Entries put at the end so far. */
  private placed = 0;

  /** `limit` 0 or less keeps nothing. */
  constructor(private readonly limit: number) {
    this.entries = new BoundedMap(limit);
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.placed - entry.placedAt >= this.limit / 2) {
      entry.placedAt = ++this.placed;
      this.entries.set(key, entry);
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    this.entries.set(key, { value, placedAt: ++this.placed });
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
    for (const [key, entry] of this.entries.oldestFirst()) yield [key, entry.value];
  }
}
