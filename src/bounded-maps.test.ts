import { describe, expect, it } from 'vitest';
import { BoundedMap, RecentlyUsedMap } from './bounded-maps.js';

describe('BoundedMap', () => {
  it('forgets the oldest entries beyond its limit, a read moving nothing', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect([map.has('a'), map.get('b'), map.get('c'), map.size]).toEqual([false, 2, 3, 2]);
    map.set('b', 4);
    expect([...map.oldestFirst()]).toEqual([
      ['c', 3],
      ['b', 4],
    ]);
  });
});

describe('RecentlyUsedMap', () => {
  it('forgets the least recently used beyond its limit', () => {
    const map = new RecentlyUsedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect(map.get('b')).toBeUndefined();
    expect([...map]).toEqual([
      ['a', 1],
      ['c', 3],
    ]);
  });

  it('moves a read entry to the end only from the older half, so reads of recent entries change nothing', () => {
    const map = new RecentlyUsedMap<string, number>(4);
    for (const [i, key] of ['h1', 'h2', 'h3', 'h4'].entries()) map.set(key, i);
    map.get('h3'); // in the newer half: stays where it is
    map.get('h1'); // in the older half: now the most recent
    expect([...map].map(([key]) => key)).toEqual(['h2', 'h3', 'h4', 'h1']);
    map.set('h5', 4);
    map.set('h6', 5);
    // h2, then h3: read while recent, h3 never moved, and went once it was the oldest.
    expect([...map].map(([key]) => key)).toEqual(['h4', 'h1', 'h5', 'h6']);
  });

  it('keeps nothing with a limit of 0, and deletes while iterating', () => {
    const off = new RecentlyUsedMap<string, number>(0);
    off.set('a', 1);
    expect(off.size).toBe(0);
    const map = new RecentlyUsedMap<string, number>(5);
    for (const [i, key] of ['a', 'b', 'c'].entries()) map.set(key, i);
    for (const [key, value] of map) if (value !== 1) map.delete(key);
    expect([...map]).toEqual([['b', 1]]);
  });
});
