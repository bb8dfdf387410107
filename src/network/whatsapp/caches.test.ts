/** The driver's TTL cache (Signal keys, devices, groups): every access drops what expired, not only the entry read. */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { isUncachedKeyEntry, TtlCache } from './caches.js';

describe('TtlCache', () => {
  it('drops the expired pre-keys of a first link at the next access, whichever key it names', () => {
    const clock = new ManualClock();
    const cache = new TtlCache(50_000, 5 * 60_000, clock);
    for (let i = 0; i < 812; i += 1) cache.set(`pre-key:${i}`, { id: i });
    clock.advance(5 * 60_000 - 1);
    expect(cache.get('pre-key:3')).toEqual({ id: 3 });
    expect(cache.size).toBe(812);

    clock.advance(1);
    cache.set('session:5511', 'live');
    expect(cache.size).toBe(1);
    expect(cache.get('pre-key:811')).toBeUndefined();
    expect(cache.get('session:5511')).toBe('live');
  });

  it('keeps what was set again for a full TTL from then, and the bound on entries still holds', () => {
    const clock = new ManualClock();
    const cache = new TtlCache(3, 1000, clock);
    cache.set('a', 1);
    cache.set('b', 2);
    clock.advance(600);
    cache.set('a', 10);
    clock.advance(500);
    // b expired (set 1100 ms ago); a was set again 500 ms ago.
    expect(cache.get('a')).toBe(10);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.size).toBe(1);
    cache.set('c', 3);
    cache.set('d', 4);
    cache.set('e', 5);
    expect(cache.size).toBe(3);
    expect(cache.get('a')).toBeUndefined();
    cache.del('e');
    expect(cache.get('e')).toBeUndefined();
    cache.flushAll();
    expect(cache.size).toBe(0);
  });

  it('keeps nothing under a bypassed key (the Signal key cache: pre-keys, app-state sync versions)', () => {
    const cache = new TtlCache(50_000, 5 * 60_000, new ManualClock(), isUncachedKeyEntry);
    cache.set('pre-key.7', { id: 7 });
    cache.set('session.5511988887777.0', 'record');
    cache.set('app-state-sync-version.regular_low', { version: 3 });
    expect(cache.get('pre-key.7')).toBeUndefined();
    expect(cache.get('app-state-sync-version.regular_low')).toBeUndefined();
    expect(cache.get('session.5511988887777.0')).toBe('record');
    expect(cache.size).toBe(1);
  });
});
