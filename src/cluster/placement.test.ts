import { describe, expect, it } from 'vitest';
import { planTick, preferredNode } from './placement.js';

const ids = Array.from({ length: 3000 }, (_, i) => `inst-${i}`);

describe('placement (rendezvous hashing)', () => {
  it('spreads instances evenly and the same way in every process', () => {
    const nodes = ['a', 'b', 'c'];
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(preferredNode(id, nodes)!, (counts.get(preferredNode(id, nodes)!) ?? 0) + 1);
    for (const node of nodes) expect(Math.abs(counts.get(node)! - 1000)).toBeLessThan(100);
    // Order of the list does not matter.
    for (const id of ids.slice(0, 200)) expect(preferredNode(id, ['c', 'a', 'b'])).toBe(preferredNode(id, nodes));
    expect(preferredNode('x', [])).toBeUndefined();
  });

  it('moves only the instances that now prefer a joining node, and only those of a leaving one', () => {
    const before = ids.map((id) => preferredNode(id, ['a', 'b', 'c']));
    const joined = ids.map((id) => preferredNode(id, ['a', 'b', 'c', 'd']));
    const moved = ids.filter((_, i) => before[i] !== joined[i]);
    expect(moved.every((id) => preferredNode(id, ['a', 'b', 'c', 'd']) === 'd')).toBe(true);
    expect(Math.abs(moved.length - 750)).toBeLessThan(100);
    const left = ids.map((id) => preferredNode(id, ['a', 'c']));
    ids.forEach((_, i) => {
      if (before[i] !== 'b') expect(left[i]).toBe(before[i]);
    });
  });
});

describe('planTick', () => {
  const lease = (instanceId: string, owner: string | null, longFree = false) => ({ instanceId, owner, longFree });

  it('takes the free instances that prefer it, and long-free ones whatever they prefer', () => {
    const nodes = ['a', 'b'];
    const mine = ids.filter((id) => preferredNode(id, nodes) === 'a').slice(0, 5);
    const theirs = ids.filter((id) => preferredNode(id, nodes) === 'b').slice(0, 5);
    const plan = planTick(
      'a',
      nodes,
      [...mine.map((id) => lease(id, null)), ...theirs.map((id) => lease(id, null)), lease(theirs[0]!, null, true)],
      10,
    );
    expect(plan.claim).toEqual([...mine, theirs[0]]);
    expect(plan.release).toEqual([]);
  });

  it('hands over at most movesPerTick instances another live node prefers, and never one held by someone else', () => {
    const theirs = ids.filter((id) => preferredNode(id, ['a', 'b']) === 'b').slice(0, 30);
    const plan = planTick('a', ['a', 'b'], [...theirs.map((id) => lease(id, 'a')), lease('held-by-b', 'b')], 7);
    expect(plan.release).toEqual(theirs.slice(0, 7));
    expect(plan.claim).toEqual([]);
  });

  it('keeps the instances that must stay now and hands over others in their place', () => {
    const theirs = ids.filter((id) => preferredNode(id, ['a', 'b']) === 'b').slice(0, 10);
    const staying = new Set(theirs.slice(0, 3));
    const plan = planTick(
      'a',
      ['a', 'b'],
      theirs.map((id) => lease(id, 'a')),
      5,
      undefined,
      (id) => staying.has(id),
    );
    expect(plan.release).toEqual(theirs.slice(3, 8));
  });

  it('a draining node (not a candidate) takes nothing and gives everything back, staying or not', () => {
    const plan = planTick('a', ['b'], [lease('x', 'a'), lease('y', null), lease('z', 'a')], 1, undefined, () => true);
    expect(plan).toEqual({ claim: [], release: ['x', 'z'] });
  });
});
