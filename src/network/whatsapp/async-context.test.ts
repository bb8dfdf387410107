import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { addTransactionCapability, type SignalDataSet, type SignalDataTypeMap, type SignalKeyStore } from 'baileys';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { SharedAsyncLocalStorage, shareAsyncLocalStorage } from './async-context.js';

describe('one AsyncLocalStorage for every Baileys socket', () => {
  shareAsyncLocalStorage();

  it('is what `new AsyncLocalStorage()` makes from then on, for ESM imports and require alike', () => {
    // The ESM binding is live: it names the shared class once installed.
    expect(new AsyncLocalStorage()).toBeInstanceOf(SharedAsyncLocalStorage);
    const required = createRequire(import.meta.url)('node:async_hooks') as typeof import('node:async_hooks');
    expect(new required.AsyncLocalStorage()).toBeInstanceOf(SharedAsyncLocalStorage);
    shareAsyncLocalStorage(); // idempotent
    expect(new AsyncLocalStorage()).toBeInstanceOf(SharedAsyncLocalStorage);
  });

  it('keeps each instance its own value across awaits, nested runs, exit and enterWith', async () => {
    const a = new AsyncLocalStorage<string>();
    const b = new AsyncLocalStorage<string>();
    expect(a.getStore()).toBeUndefined();
    await a.run('a1', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(a.getStore()).toBe('a1');
      expect(b.getStore()).toBeUndefined();
      await b.run('b1', async () => {
        await Promise.resolve();
        expect([a.getStore(), b.getStore()]).toEqual(['a1', 'b1']);
        a.exit(() => expect([a.getStore(), b.getStore()]).toEqual([undefined, 'b1']));
        await a.run('a2', async () => {
          await new Promise((resolve) => setImmediate(resolve));
          expect([a.getStore(), b.getStore()]).toEqual(['a2', 'b1']);
        });
        expect(a.getStore()).toBe('a1');
      });
      expect(b.getStore()).toBeUndefined();
    });
    expect(a.getStore()).toBeUndefined();

    // Concurrent runs do not see each other's values.
    const seen = await Promise.all(
      ['x', 'y', 'z'].map((value) =>
        a.run(value, async () => {
          await new Promise((resolve) => setTimeout(resolve, 3));
          return a.getStore();
        }),
      ),
    );
    expect(seen).toEqual(['x', 'y', 'z']);

    await new Promise<void>((resolve) => {
      setImmediate(() => {
        b.enterWith('entered');
        expect(b.getStore()).toBe('entered');
        b.disable();
        expect(b.getStore()).toBeUndefined();
        resolve();
      });
    });
    const bound = AsyncLocalStorage.bind(() => a.getStore());
    expect(a.run('outer', () => bound())).toBeUndefined();
  });

  it("carries Baileys' key-store transactions of many sockets apart", async () => {
    const logger = pino({ level: 'silent' });
    const stores = Array.from({ length: 3 }, () => {
      const data: Record<string, Record<string, unknown>> = {};
      const store: SignalKeyStore = {
        get: async <T extends keyof SignalDataTypeMap>(type: T, ids: string[]) =>
          Object.fromEntries(ids.filter((id) => data[type]?.[id]).map((id) => [id, data[type]![id]])) as {
            [id: string]: SignalDataTypeMap[T];
          },
        set: async (set: SignalDataSet) => {
          for (const [type, values] of Object.entries(set)) Object.assign((data[type] ??= {}), values);
        },
      };
      return { data, keys: addTransactionCapability(store, logger, { maxCommitRetries: 1, delayBetweenTriesMs: 1 }) };
    });
    await Promise.all(
      stores.map(({ keys }, i) =>
        keys.transaction(async () => {
          expect(keys.isInTransaction()).toBe(true);
          await keys.set({ 'sender-key-memory': { [`chat-${i}`]: { [`member-${i}`]: true } } });
          await new Promise((resolve) => setTimeout(resolve, 2));
          // Inside the transaction the write is seen from its cache, before the commit.
          expect(await keys.get('sender-key-memory', [`chat-${i}`])).toEqual({ [`chat-${i}`]: { [`member-${i}`]: true } });
          return i;
        }, `tx-${i}`),
      ),
    );
    stores.forEach(({ data, keys }, i) => {
      expect(keys.isInTransaction()).toBe(false);
      expect(Object.keys(data['sender-key-memory'] ?? {})).toEqual([`chat-${i}`]);
    });
  });
});
