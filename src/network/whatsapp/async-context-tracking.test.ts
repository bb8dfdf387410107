import { AsyncLocalStorage } from 'node:async_hooks';
import { spawnSync } from 'node:child_process';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contextTracked, shareAsyncLocalStorage } from './async-context.js';

// A file of its own: `enterWith` (async-context.test.ts) keeps the storage on for the process's life.
describe('the shared AsyncLocalStorage is on only while a run is under way', () => {
  shareAsyncLocalStorage();

  it('is off until a run, stays on while any run is unfinished, and is off after the last one', async () => {
    const store = new AsyncLocalStorage<string>();
    expect(contextTracked()).toBe(false);

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const long = store.run('long', async () => {
      await released;
      await nextTurn();
      return store.getStore();
    });
    expect(contextTracked()).toBe(true);

    // A shorter run finishes first: the longer one still sees its value afterwards.
    const short = await store.run('short', async () => {
      await nextTurn();
      return store.getStore();
    });
    expect(short).toBe('short');
    expect(contextTracked()).toBe(true);

    release();
    expect(await long).toBe('long');
    expect(contextTracked()).toBe(false);
    expect(store.getStore()).toBeUndefined();

    // Switched on again by the next run, across timers and nested runs of other instances.
    const other = new AsyncLocalStorage<number>();
    const again = await store.run('again', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return other.run(7, async () => {
        await nextTurn();
        return [store.getStore(), other.getStore()];
      });
    });
    expect(again).toEqual(['again', 7]);
    expect(contextTracked()).toBe(false);
  });

  it('is off again after a callback that returns at once, throws, or rejects', async () => {
    const store = new AsyncLocalStorage<string>();
    expect(store.run('sync', () => store.getStore())).toBe('sync');
    expect(contextTracked()).toBe(false);

    expect(() =>
      store.run('throws', () => {
        throw new Error('at once');
      }),
    ).toThrow('at once');
    expect(contextTracked()).toBe(false);

    await expect(
      store.run('rejects', async () => {
        await nextTurn();
        throw new Error('later');
      }),
    ).rejects.toThrow('later');
    expect(contextTracked()).toBe(false);

    expect(store.exit(() => store.getStore())).toBeUndefined();
    expect(contextTracked()).toBe(false);
  });

  it('leaves a rejection nobody handles reported as unhandled, as the builtin does', () => {
    // In a process of its own: Node ends it with the unhandled rejection's error.
    const module = fileURLToPath(new URL('./async-context.ts', import.meta.url));
    const script = `
      import { shareAsyncLocalStorage } from ${JSON.stringify(module)};
      shareAsyncLocalStorage();
      const { AsyncLocalStorage } = await import('node:async_hooks');
      void new AsyncLocalStorage().run(1, async () => { throw new Error('nobody handles this'); });
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('nobody handles this');
  });

  it('stays on for good once enterWith is used (it has no end)', async () => {
    const store = new AsyncLocalStorage<string>();
    await nextTurn();
    store.enterWith('entered');
    expect(store.getStore()).toBe('entered');
    await store.run('inside', async () => nextTurn());
    expect(contextTracked()).toBe(true);
  });
});
