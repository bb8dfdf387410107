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
