import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { TurnBatch } from './turn-batch.js';

describe('TurnBatch', () => {
  it('serves the requests of one turn with one call, each its own result in order', async () => {
    const calls: number[][] = [];
    const batch = new TurnBatch(async (requests: number[]) => {
      calls.push([...requests]);
      return requests.map((n) => n * 10);
    });
    const results = await Promise.all([batch.request(1), batch.request(2), batch.request(3)]);
    expect(results).toEqual([10, 20, 30]);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('puts requests made while a call runs in the next call, right after it', async () => {
    const calls: number[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const batch = new TurnBatch(async (requests: number[]) => {
      calls.push([...requests]);
      if (calls.length === 1) await held;
      return requests;
    });
    const first = batch.request(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[1]]);
    const later = [batch.request(2), batch.request(3)];
    await new Promise((resolve) => setImmediate(resolve));
    // Still one call: the second waits for the first to finish.
    expect(calls).toEqual([[1]]);
    release();
    expect(await first).toBe(1);
    expect(await Promise.all(later)).toEqual([2, 3]);
    expect(calls).toEqual([[1], [2, 3]]);
  });

  it('next-turn: requests of several tasks of one turn (messages from another thread) are served by one call', async () => {
    const calls: Record<'end-of-task' | 'next-turn', number[][]> = { 'end-of-task': [], 'next-turn': [] };
    for (const start of ['end-of-task', 'next-turn'] as const) {
      const batch = new TurnBatch(async (requests: number[]) => {
        calls[start].push([...requests]);
        return requests.map((n) => -n);
      }, start);
      // Each message is a task of its own, as each answer of the webhook delivery thread is.
      const { port1, port2 } = new MessageChannel();
      const results: Promise<number>[] = [];
      const all = new Promise<void>((resolve) =>
        port2.on('message', (n: number) => {
          results.push(batch.request(n));
          if (results.length === 4) resolve();
        }),
      );
      for (const n of [1, 2, 3, 4]) port1.postMessage(n);
      await all;
      expect(await Promise.all(results)).toEqual([-1, -2, -3, -4]);
      port1.close();
    }
    expect(calls['end-of-task']).toEqual([[1], [2], [3], [4]]);
    expect(calls['next-turn']).toEqual([[1, 2, 3, 4]]);
  });

  it("rejects every request of a failed call, and serves the next turn's", async () => {
    let fail = true;
    const batch = new TurnBatch(async (requests: string[]) => {
      if (fail) throw new Error('storage down');
      return requests.map((r) => r.toUpperCase());
    });
    const failed = [batch.request('a'), batch.request('b')];
    await expect(Promise.all(failed)).rejects.toThrow('storage down');
    await expect(failed[1]).rejects.toThrow('storage down');
    fail = false;
    expect(await batch.request('c')).toBe('C');
  });
});
