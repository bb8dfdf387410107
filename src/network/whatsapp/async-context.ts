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
 */
import asyncHooks from 'node:async_hooks';
import { syncBuiltinESMExports } from 'node:module';

const Native = asyncHooks.AsyncLocalStorage;
type Context = ReadonlyMap<object, unknown>;
const EMPTY: Context = new Map();

let shared: InstanceType<typeof Native<Context>> | undefined;

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

/** An AsyncLocalStorage whose value travels in the one shared context. */
export class SharedAsyncLocalStorage<T> {
  static bind = Native.bind.bind(Native);
  static snapshot = Native.snapshot.bind(Native);

  getStore(): T | undefined {
    return current().get(this) as T | undefined;
  }

  run<R, A extends unknown[]>(store: T, callback: (...args: A) => R, ...args: A): R {
    return shared!.run(withValue(current(), this, store), callback, ...args);
  }

  exit<R, A extends unknown[]>(callback: (...args: A) => R, ...args: A): R {
    return shared!.run(without(current(), this), callback, ...args);
  }

  enterWith(store: T): void {
    shared!.enterWith(withValue(current(), this, store));
  }

  /**
   * This instance has no value from now on in the current context. (The builtin's drops its value in
   * every context at once; Baileys never calls it.)
   */
  disable(): void {
    const context = current();
    if (context.has(this)) shared!.enterWith(without(context, this));
  }
}

/** Installs SharedAsyncLocalStorage as the builtin's export (see above). */
export function shareAsyncLocalStorage(): void {
  if (shared) return;
  shared = new Native<Context>();
  (asyncHooks as { AsyncLocalStorage: unknown }).AsyncLocalStorage = SharedAsyncLocalStorage;
  syncBuiltinESMExports();
}
