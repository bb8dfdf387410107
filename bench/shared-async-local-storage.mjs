// An experiment for the session-cost bench, never loaded by the gateway: every AsyncLocalStorage of
// the process shares one real storage (a Map keyed per instance), as WhiskeySockets/Baileys#2722
// proposes for Baileys' per-socket transaction storage. On Node 20 each enabled storage is walked on
// every async resource the process creates, and Baileys enables one per socket and never disables
// it. Load it before tsx:
//   NODE_OPTIONS=--expose-gc SESSION_ACCOUNT=empty node --expose-gc \
//     --import ./bench/shared-async-local-storage.mjs --import tsx bench/session-cost.ts
import { createRequire, syncBuiltinESMExports } from 'node:module';

const require = createRequire(import.meta.url);
const asyncHooks = require('node:async_hooks');
const Real = asyncHooks.AsyncLocalStorage;
const shared = new Real();

/** The stores of every instance in the current context, with `key`'s set to `store` (or removed). */
function withStore(key, store) {
  const stores = new Map(shared.getStore());
  if (store === undefined) stores.delete(key);
  else stores.set(key, store);
  return stores;
}

class SharedAsyncLocalStorage {
  key = Symbol('AsyncLocalStorage');

  static bind(fn) {
    return Real.bind(fn);
  }

  static snapshot() {
    return Real.snapshot();
  }

  run(store, fn, ...args) {
    return shared.run(withStore(this.key, store), fn, ...args);
  }

  exit(fn, ...args) {
    return shared.run(withStore(this.key, undefined), fn, ...args);
  }

  getStore() {
    return shared.getStore()?.get(this.key);
  }

  enterWith(store) {
    shared.enterWith(withStore(this.key, store));
  }

  disable() {}
}

asyncHooks.AsyncLocalStorage = SharedAsyncLocalStorage;
syncBuiltinESMExports();
