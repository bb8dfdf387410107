/**
 * Small helpers the session shares with Baileys: a bounded TTL cache (Baileys' CacheStore shape, for
 * the Signal key cache, the message-retry counters, device lists and group metadata), timers that
 * tests replace, and a lock that lets one lifecycle operation run at a time.
 */
import type { CacheStore } from 'baileys';
import type { Clock } from '../../clock.js';
import { BoundedMap } from '../../bounded-maps.js';

export class TtlCache implements CacheStore {
  private readonly entries: BoundedMap<string, { value: unknown; expiresAt: number }>;

  /** `bypass`: keys never kept (set is a no-op for them, get misses). */
  constructor(
    limit: number,
    private readonly ttlMs: number,
    private readonly clock: Clock,
    private readonly bypass: (key: string) => boolean = () => false,
  ) {
    this.entries = new BoundedMap(limit);
  }

  get<T>(key: string): T | undefined {
    this.sweep();
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value as T;
  }

  set<T>(key: string, value: T): void {
    this.sweep();
    if (this.bypass(key)) return;
    this.entries.set(key, { value, expiresAt: this.clock.now() + this.ttlMs });
  }

  /**
   * Drops every expired entry, not only the one read: the pre-keys a first link writes (hundreds)
   * would otherwise stay for the session's life. Entries sit in expiry order (one TTL, re-set moves
   * an entry to the end), so this stops at the first live one: O(1) when nothing expired.
   */
  sweep(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.entries.oldestFirst()) {
      if (entry.expiresAt > now) break;
      this.entries.delete(key);
    }
  }

  del(key: string): void {
    this.entries.delete(key);
  }

  flushAll(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Key-store entries not worth caching. Signal pre-keys: a first link writes 812 at once and each is
 * read at most once (when a contact opens a session with it). App-state sync versions: read once
 * per app-state sync (rare), and their hash state (a 32-byte MAC per contact, label, chat setting)
 * comes out of the sync as views into the large buffers it was decoded from. A cache would only
 * hold them until they expire. The session's key store (auth-store.ts, `cachedKeyStore`) names
 * entries `<type>.<id>`.
 */
export const isUncachedKeyEntry = (key: string): boolean => key.startsWith('pre-key.') || key.startsWith('app-state-sync-version.');

/** setTimeout/clearTimeout behind an interface, so reconnect tests fire timers by hand. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: Timers = {
  setTimeout(callback, ms) {
    const handle = setTimeout(callback, ms);
    handle.unref();
    return handle;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/** Runs async sections one after another, in call order. */
export class SerialLock {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const result = this.tail.then(section, section);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
