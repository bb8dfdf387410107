import { describe, expect, it } from 'vitest';
import { isoTime, isoTimeOrNull, systemIds, TimeOrderedIds } from './clock.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('TimeOrderedIds', () => {
  it('makes version 7 UUIDs whose first 48 bits are the time in milliseconds', () => {
    const at = Date.parse('2026-11-26T12:00:00.123Z');
    const id = new TimeOrderedIds(() => at).next();
    expect(id).toMatch(V7);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
  });

  it('sorts ids in the order they were made, within one millisecond and past the counter', () => {
    // 10,000 ids in one millisecond: the 12-bit counter runs out twice and borrows the next milliseconds.
    const ids = new TimeOrderedIds(() => 1_800_000_000_000);
    const made = Array.from({ length: 10_000 }, () => ids.next());
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(made.length);
    for (const id of made) expect(id).toMatch(V7);
  });

  it('draws fresh random bits for every id, across refills of its random pool', () => {
    // The random pool holds 512 ids' worth: 2,000 ids cross three refills.
    const ids = new TimeOrderedIds(() => 1_800_000_000_000);
    const randomParts = Array.from({ length: 2_000 }, () => ids.next().replace(/-/g, '').slice(17));
    expect(new Set(randomParts).size).toBe(randomParts.length);
  });

  it('gives the same ids as upper-case hex without dashes, in the same order, from one sequence', () => {
    const ids = new TimeOrderedIds(() => 1_800_000_000_000);
    const made = Array.from({ length: 1_000 }, (_, i) => (i % 2 === 0 ? ids.next().replace(/-/g, '').toUpperCase() : ids.nextHex()));
    for (const id of made) expect(id).toMatch(/^[0-9A-F]{12}7[0-9A-F]{3}[89AB][0-9A-F]{15}$/);
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(made.length);
  });

  it('keeps the order when the clock steps back', () => {
    let now = 1_800_000_000_500;
    const ids = new TimeOrderedIds(() => now);
    const first = ids.next();
    now -= 400;
    const second = ids.next();
    expect(second > first).toBe(true);
  });

  it('is what systemIds hands out', () => {
    const a = systemIds.id();
    const b = systemIds.id();
    expect(a).toMatch(V7);
    expect(b > a).toBe(true);
  });
});

describe('isoTime', () => {
  const same = (ms: number) => expect(isoTime(ms)).toBe(new Date(ms).toISOString());

  it('writes what Date writes, within a second, across seconds, and going back', () => {
    const start = Date.parse('2026-11-29T09:19:30.990Z');
    for (let ms = start; ms < start + 2100; ms += 7) same(ms);
    for (let ms = start + 2100; ms > start - 1500; ms -= 13) same(ms);
    for (const ms of [0, 1, 9, 10, 99, 100, 999, 1000, Date.parse('2026-12-31T23:59:59.999Z'), Date.parse('2027-01-01T00:00:00.000Z')])
      same(ms);
  });

  it('leaves other values to Date: fractions, years before 1970 and outside 0-9999', () => {
    for (const ms of [1795943971213.5, -1, -999, -1000, -1001, Date.parse('1969-12-31T23:59:59.001Z'), 253402300800000, -62198755200001]) {
      same(ms);
      same(Math.floor(ms));
    }
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });

  it('isoTimeOrNull keeps a column that is not set as null', () => {
    expect(isoTimeOrNull(null)).toBeNull();
    expect(isoTimeOrNull(1795943971213)).toBe('2026-11-29T09:19:31.213Z');
  });
});
