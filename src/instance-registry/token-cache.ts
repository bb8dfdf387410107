/**
 * A bounded cache of token hash -> owner, so an authenticated request does not read the database.
 * Rotation and deletion in this process evict the instance's entries at once; entries also expire
 * after a short time so changes made by another gateway process are seen within that time.
 */
import type { TokenRecord } from './repo.js';

interface Entry extends TokenRecord {
  expiresAt: number;
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();

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
    // Map order is insertion order: re-inserting keeps recently used entries last (LRU).
    this.entries.delete(hash);
    this.entries.set(hash, entry);
    return entry;
  }

  set(hash: string, record: TokenRecord, now: number): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(hash);
    this.entries.set(hash, { ...record, expiresAt: now + this.ttlMs });
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
