/**
 * Baileys gives every socket its own AsyncLocalStorage (the key store's transactions). On Node 20 an
 * AsyncLocalStorage, once used, stays in a process-wide list that every new promise and callback
 * walks, and is never taken out, even after its socket closed. With a thousand sessions each promise
 * of the whole gateway paid a thousand steps, and reconnects kept adding more: 1,000 sessions could
 * not even be resumed.
 *
 * `shareAsyncLocalStorage()` replaces the `AsyncLocalStorage` that modules import (the builtin's
 * export, through `syncBuiltinESMExports`) with one whose instances all ride on a single real
 * AsyncLocalStorage: the context holds a small map from instance to value. Each instance still sees
 * only its own value with the same semantics (run, exit, enterWith, getStore; disable see below), and the
 * runtime keeps one entry whatever the number of sockets. Baileys is the only runtime dependency
 * that creates AsyncLocalStorage instances; installed before the first socket, idempotent.
 *
 * The shared storage is switched on only while a `run` is under way (its callback's promise not yet
 * settled), and off again after the last one. While any AsyncLocalStorage is on, Node 20 runs promise
 * hooks for every promise of the process and V8 leaves its fast path for `await`: the send road lost
 * 16 % of its requests/s with one switched on. Baileys runs only its key-store transactions in a
 * context, so between them the gateway's requests pay nothing. A continuation that outlives its run
 * (started inside it, not awaited by it) may find no value once the storage is off; the builtin would
 * hand it the value of a transaction already committed. `enterWith` has no end: it keeps the storage
 * on for good.
 */
import asyncHooks from 'node:async_hooks';
import { syncBuiltinESMExports } from 'node:module';

const Native = asyncHooks.AsyncLocalStorage;
type Context = ReadonlyMap<object, unknown>;
const EMPTY: Context = new Map();

let shared: InstanceType<typeof Native<Context>> | undefined;
/** Runs whose callback has not finished (a promise not yet settled). */
let running = 0;
/** `enterWith` was used: the storage stays on. */
let pinned = false;

function current(): Context {
  return shared!.getStore() ?? EMPTY;
}

function withValue(context: Context, key: object, value: unknown): Context {
  const next = new Map(context);
  next.set(key, value);
  return next;
}

function without(context: Context, key: object): Context {
  if (!context.has(key)) return context;
  const next = new Map(context);
  next.delete(key);
  return next;
}

function finished(): void {
  running -= 1;
  // Off: no promise hook runs until the next run switches it on (Native.run does).
  if (running === 0 && !pinned) shared!.disable();
}

/** Runs `callback` in `context`, keeping the storage on until it has finished. */
function runIn<R, A extends unknown[]>(context: Context, callback: (...args: A) => R, args: A): R {
  running += 1;
  let result: R;
  try {
    result = shared!.run(context, callback, ...args);
  } catch (error) {
    finished();
    throw error;
  }
  // Only a promise: calling `then` on another thenable (a query builder) could start its work again.
  // The caller gets a promise settled as the callback's, after the storage's count: a rejection the
  // caller leaves unhandled is still reported as unhandled.
  if (result instanceof Promise) return result.finally(finished) as R;
  finished();
  return result;
}

/** Whether Node tracks the shared storage now (its promise hooks on): for tests. */
export function contextTracked(): boolean {
  return (shared as unknown as { enabled?: boolean } | undefined)?.enabled === true;
}

/** An AsyncLocalStorage whose value travels in the one shared context. */
export class SharedAsyncLocalStorage<T> {
  static bind = Native.bind.bind(Native);
  static snapshot = Native.snapshot.bind(Native);

  getStore(): T | undefined {
    return current().get(this) as T | undefined;
  }

  run<R, A extends unknown[]>(store: T, callback: (...args: A) => R, ...args: A): R {
    return runIn(withValue(current(), this, store), callback, args);
  }

  exit<R, A extends unknown[]>(callback: (...args: A) => R, ...args: A): R {
    return runIn(without(current(), this), callback, args);
  }

  enterWith(store: T): void {
    pinned = true;
    shared!.enterWith(withValue(current(), this, store));
  }

  /**
   * This instance has no value from now on in the current context. (The builtin's drops its value in
   * every context at once; Baileys never calls it.)
   */
  disable(): void {
    const context = current();
    if (context.has(this)) {
      pinned = true;
      shared!.enterWith(without(context, this));
    }
  }
}

/** Installs SharedAsyncLocalStorage as the builtin's export (see above). */
export function shareAsyncLocalStorage(): void {
  if (shared) return;
  shared = new Native<Context>();
  (asyncHooks as { AsyncLocalStorage: unknown }).AsyncLocalStorage = SharedAsyncLocalStorage;
  syncBuiltinESMExports();
}
