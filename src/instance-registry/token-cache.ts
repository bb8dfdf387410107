/**
 * A bounded cache of token hash -> owner, so an authenticated request does not read the database.
 * Rotation and deletion in this process evict the instance's entries at once; entries also expire
 * after a short time so changes made by another gateway process are seen within that time. Nearly
 * least recently used goes first (RecentlyUsedMap: a hit does not rebuild the map's table).
 */
import { RecentlyUsedMap } from '../bounded-maps.js';
import type { TokenRecord } from './repo.js';

interface Entry extends TokenRecord {
  expiresAt: number;
}

export class TokenCache {
  private readonly entries: RecentlyUsedMap<string, Entry>;

  constructor(
    maxEntries: number,
    private readonly ttlMs: number,
  ) {
    this.entries = new RecentlyUsedMap(maxEntries);
  }

  get(hash: string, now: number): TokenRecord | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry;
  }

  set(hash: string, record: TokenRecord, now: number): void {
    this.entries.set(hash, { ...record, expiresAt: now + this.ttlMs });
  }

  evictInstance(instanceId: string): void {
    for (const [hash, entry] of this.entries) if (entry.instanceId === instanceId) this.entries.delete(hash);
  }

  get size(): number {
    return this.entries.size;
  }
}
