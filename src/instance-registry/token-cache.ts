/**
 * A bounded cache of token hash -> owner, so an authenticated request does not read the database.
 * Rotation and deletion in this process evict the instance's entries at once; entries also expire
 * after a short time so changes made by another gateway process are seen within that time.
 *
 * Least recently used goes first, nearly: a read moves its entry to the end of the map only when it
 * is in the older half. Moving it on every read (a delete and a set per authenticated request) made
 * V8 build the long-lived map's hash table again each time, in the old generation: ~150 bytes of
 * old-space garbage per request, and every young object the dead tables pointed at was kept through
 * scavenges with them (bench/README, twenty-second run).
 */
import type { TokenRecord } from './repo.js';

interface Entry extends TokenRecord {
  expiresAt: number;
  /** `placed` when the entry was last put at the end. */
  placedAt: number;
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  /** Entries put at the end so far. */
  private placed = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  get(hash: string, now: number): TokenRecord | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(hash);
      return undefined;
    }
    if (this.placed - entry.placedAt >= this.maxEntries / 2) {
      // Map order is insertion order: inserted again, it is the most recent.
      this.entries.delete(hash);
      entry.placedAt = ++this.placed;
      this.entries.set(hash, entry);
    }
    return entry;
  }

  set(hash: string, record: TokenRecord, now: number): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(hash);
    this.entries.set(hash, { ...record, expiresAt: now + this.ttlMs, placedAt: ++this.placed });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  evictInstance(instanceId: string): void {
    for (const [hash, entry] of this.entries) if (entry.instanceId === instanceId) this.entries.delete(hash);
  }

  get size(): number {
    return this.entries.size;
  }
}
