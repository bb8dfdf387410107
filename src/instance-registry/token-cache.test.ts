import { describe, expect, it } from 'vitest';
import { TokenCache } from './token-cache.js';

describe('TokenCache', () => {
  it('returns cached owners until their time runs out', () => {
    const cache = new TokenCache(10, 1000);
    cache.set('h1', { instanceId: 'a', validUntil: null }, 0);
    expect(cache.get('h1', 999)).toMatchObject({ instanceId: 'a' });
    expect(cache.get('h1', 1000)).toBeUndefined();
  });

  it('keeps at most maxEntries, dropping the least recently used', () => {
    const cache = new TokenCache(2, 10_000);
    cache.set('h1', { instanceId: 'a', validUntil: null }, 0);
    cache.set('h2', { instanceId: 'b', validUntil: null }, 0);
    cache.get('h1', 1);
    cache.set('h3', { instanceId: 'c', validUntil: null }, 2);
    expect(cache.get('h2', 3)).toBeUndefined();
    expect(cache.get('h1', 3)).toBeDefined();
    expect(cache.size).toBe(2);
  });

  it('moves a read entry to the end only from the older half, so reads of recent entries change nothing', () => {
    const cache = new TokenCache(4, 10_000);
    for (const hash of ['h1', 'h2', 'h3', 'h4']) cache.set(hash, { instanceId: hash, validUntil: null }, 0);
    cache.get('h3', 1); // in the newer half: stays where it is
    cache.get('h1', 1); // in the older half: now the most recent
    cache.set('h5', { instanceId: 'e', validUntil: null }, 2);
    cache.set('h6', { instanceId: 'f', validUntil: null }, 2);
    // h2, then h3: read while recent, h3 never moved, and went once it was the oldest.
    expect(cache.get('h2', 3)).toBeUndefined();
    expect(cache.get('h3', 3)).toBeUndefined();
    for (const hash of ['h1', 'h4', 'h5', 'h6']) expect(cache.get(hash, 3)).toBeDefined();
    expect(cache.size).toBe(4);
  });

  it('evicts every entry of an instance (rotation, deletion) and caches nothing when disabled', () => {
    const cache = new TokenCache(10, 10_000);
    cache.set('h1', { instanceId: 'a', validUntil: null }, 0);
    cache.set('h2', { instanceId: 'a', validUntil: 5 }, 0);
    cache.set('h3', { instanceId: 'b', validUntil: null }, 0);
    cache.evictInstance('a');
    expect(cache.size).toBe(1);
    const off = new TokenCache(0, 10_000);
    off.set('h1', { instanceId: 'a', validUntil: null }, 0);
    expect(off.get('h1', 0)).toBeUndefined();
  });
});
