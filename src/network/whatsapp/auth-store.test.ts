/**
 * The auth state in the database, on SQLite and PostgreSQL: Baileys' creds and Signal keys survive a
 * reload byte for byte, key writes follow SignalKeyStore semantics atomically (also when many run at
 * once), and deleting an instance deletes its keys.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addTransactionCapability, initAuthCreds, proto, type SignalDataSet } from 'baileys';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../clock.js';
import { dropSchema, type Storage } from '../../storage/db.js';
import { StaleOwnerError } from '../../storage/fence.js';
import { LidDirectory } from './addresses.js';
import { authStateFor, cachedKeyStore, WhatsAppAuthStore } from './auth-store.js';
import { isUncachedKeyEntry, TtlCache } from './caches.js';
import { storageWithInstance } from './fixtures/harness.js';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const dialects = [
  { name: 'sqlite', url: () => `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wa-auth-')), 'auth.db')}`, schema: undefined },
  { name: 'postgres', url: () => PG_URL, schema: `wg_wa_${process.pid}_${randomBytes(4).toString('hex')}` },
] as const;

describe.each(dialects)('auth store on $name', ({ url, schema }) => {
  let storage: Storage;
  let addInstance: () => Promise<string>;
  let store: WhatsAppAuthStore;

  beforeAll(async () => {
    ({ storage, addInstance } = await storageWithInstance(url(), schema));
    store = new WhatsAppAuthStore(storage.db, systemClock);
  });

  afterAll(async () => {
    await storage.close();
    if (schema) await dropSchema(PG_URL, schema);
  });

  it('under a cluster fence, a process that no longer owns the instance writes no creds, keys or wipe', async () => {
    const id = await addInstance();
    const creds = initAuthCreds();
    await store.saveCreds(id, creds);
    await store.setKeys(id, { 'pre-key': { '1': { public: Buffer.from([1]), private: Buffer.from([2]) } } });
    let owner = true;
    const fenced = new WhatsAppAuthStore(storage.db, systemClock, (_trx, ids) => Promise.resolve(owner ? [] : ids));
    creds.registered = true;
    await fenced.saveCreds(id, creds);
    expect((await store.loadCreds(id))?.registered).toBe(true);
    owner = false;
    creds.registered = false;
    await expect(fenced.saveCreds(id, creds)).rejects.toBeInstanceOf(StaleOwnerError);
    await expect(
      fenced.setKeys(id, { 'pre-key': { '1': null, '2': { public: Buffer.from([3]), private: Buffer.from([4]) } } }),
    ).rejects.toBeInstanceOf(StaleOwnerError);
    await expect(fenced.wipe(id)).rejects.toBeInstanceOf(StaleOwnerError);
    expect((await store.loadCreds(id))?.registered).toBe(true);
    expect(Object.keys(await store.getKeys(id, 'pre-key', ['1', '2']))).toEqual(['1']);
  });

  it('creds round-trip with their binary keys intact', async () => {
    const id = await addInstance();
    expect(await store.loadCreds(id)).toBeUndefined();
    const creds = initAuthCreds();
    creds.me = { id: '5511999999999:3@s.whatsapp.net', lid: '200000000000003:3@lid' };
    creds.routingInfo = Buffer.from([1, 2, 3]);
    await store.saveCreds(id, creds);
    const loaded = await store.loadCreds(id);
    expect(Buffer.isBuffer(loaded?.noiseKey.private)).toBe(true);
    expect(Buffer.compare(loaded!.noiseKey.private, creds.noiseKey.private)).toBe(0);
    expect(Buffer.compare(loaded!.signedPreKey.signature, creds.signedPreKey.signature)).toBe(0);
    expect(loaded?.routingInfo).toEqual(Buffer.from([1, 2, 3]));
    expect(loaded?.me).toEqual(creds.me);
    // A second save replaces the row.
    creds.registered = true;
    await store.saveCreds(id, creds);
    expect((await store.loadCreds(id))?.registered).toBe(true);
  });

  it('keys: get returns only what exists, null deletes, app-state keys come back as protobufs', async () => {
    const id = await addInstance();
    const preKey = { public: randomBytes(32), private: randomBytes(32) };
    const session = randomBytes(100);
    await store.setKeys(id, {
      'pre-key': { '1': preKey, '2': { public: randomBytes(32), private: randomBytes(32) } },
      session: { '5511999999999.0': session },
      'app-state-sync-key': { AAAA: proto.Message.AppStateSyncKeyData.fromObject({ keyData: randomBytes(32), timestamp: 5 }) },
      'lid-mapping': { '5511999999999': '200000000000003' },
    });
    const preKeys = await store.getKeys(id, 'pre-key', ['1', '2', '3']);
    expect(Object.keys(preKeys).sort()).toEqual(['1', '2']);
    expect(Buffer.compare(Buffer.from(preKeys['1']!.private), preKey.private)).toBe(0);
    const sessions = await store.getKeys(id, 'session', ['5511999999999.0']);
    expect(Buffer.compare(Buffer.from(sessions['5511999999999.0']!), session)).toBe(0);
    const appState = await store.getKeys(id, 'app-state-sync-key', ['AAAA']);
    expect(appState.AAAA).toBeInstanceOf(proto.Message.AppStateSyncKeyData);
    expect((await store.getKeys(id, 'lid-mapping', ['5511999999999']))['5511999999999']).toBe('200000000000003');

    await store.setKeys(id, { 'pre-key': { '1': null } });
    expect(Object.keys(await store.getKeys(id, 'pre-key', ['1', '2']))).toEqual(['2']);
  });

  it("a message's session write (one statement, its SQL built once) lands each time with that call's values", async () => {
    const id = await addInstance();
    const other = await addInstance();
    const sessionOf = async (instance: string, address: string) =>
      Buffer.from((await store.getKeys(instance, 'session', [address]))[address] ?? []).toString();
    for (const round of ['first', 'second', 'third']) {
      await store.setKeys(id, { session: { 'a.0': Buffer.from(`${round} a`) } });
      await store.setKeys(other, { session: { 'a.0': Buffer.from(`${round} other`) } });
      await store.setKeys(id, { session: { 'a.0': Buffer.from(`${round} a again`), 'b.0': Buffer.from(`${round} b`) } });
      expect(await sessionOf(id, 'a.0')).toBe(`${round} a again`);
      expect(await sessionOf(id, 'b.0')).toBe(`${round} b`);
      expect(await sessionOf(other, 'a.0')).toBe(`${round} other`);
    }
  });

  it('writes hundreds of keys in one set (a pre-key upload) atomically', async () => {
    const id = await addInstance();
    const preKeys: Record<string, { public: Buffer; private: Buffer }> = {};
    for (let i = 1; i <= 812; i++) preKeys[String(i)] = { public: randomBytes(32), private: randomBytes(32) };
    await store.setKeys(id, { 'pre-key': preKeys });
    expect(await store.countKeys(id)).toBe(812);
    const some = await store.getKeys(
      id,
      'pre-key',
      Array.from({ length: 812 }, (_, i) => String(i + 1)),
    );
    expect(Object.keys(some)).toHaveLength(812);
  });

  it('concurrent key writes (overlapping ids, mixed deletes) all land, without deadlock', async () => {
    const id = await addInstance();
    const writers = Array.from({ length: 24 }, (_, writer) => {
      const data: SignalDataSet = { session: {}, 'sender-key': {} };
      // Every writer touches the shared ids 0..9 in a different order, plus its own id.
      const shared = Array.from({ length: 10 }, (_, i) => (i + writer) % 10);
      for (const i of shared) data.session![`shared.${i}`] = Buffer.from(`w${writer}`);
      data['sender-key']![`own.${writer}`] = Buffer.from(`w${writer}`);
      if (writer % 4 === 0) data.session![`shared.${writer % 10}`] = null;
      return store.setKeys(id, data);
    });
    await Promise.all(writers);
    const own = await store.getKeys(
      id,
      'sender-key',
      Array.from({ length: 24 }, (_, w) => `own.${w}`),
    );
    expect(Object.keys(own)).toHaveLength(24);
    const shared = await store.getKeys(
      id,
      'session',
      Array.from({ length: 10 }, (_, i) => `shared.${i}`),
    );
    // Each shared id holds some writer's full value or was deleted by the last writer to touch it.
    for (const value of Object.values(shared)) expect(Buffer.from(value).toString()).toMatch(/^w\d+$/);
  });

  it('Baileys transactions over the store commit their mutations in one write', async () => {
    const id = await addInstance();
    const keys = addTransactionCapability(store.keyStore(id), pino({ level: 'silent' }), { maxCommitRetries: 1, delayBetweenTriesMs: 1 });
    await keys.transaction(async () => {
      await keys.set({ session: { 'a.0': Buffer.from('one') } });
      await keys.set({ session: { 'b.0': Buffer.from('two') } });
      // Inside the transaction nothing is written yet.
      expect(await store.countKeys(id)).toBe(0);
    }, 'test');
    expect(await store.countKeys(id)).toBe(2);
  });

  it("a first link's pre-key upload goes to the database, not the session's key cache; the keys still read back", async () => {
    const id = await addInstance();
    const cache = new TtlCache(50_000, 5 * 60_000, systemClock, isUncachedKeyEntry);
    const auth = await authStateFor(store, id, cache);
    const preKeys: Record<string, { public: Buffer; private: Buffer }> = {};
    for (let i = 1; i <= 812; i++) preKeys[String(i)] = { public: randomBytes(32), private: randomBytes(32) };
    await auth.state.keys.set({ 'pre-key': preKeys, session: { '5511988887777.0': Buffer.from('record') } });
    // Only the session record is cached.
    expect(cache.size).toBe(1);
    const read = await auth.state.keys.get('pre-key', ['5', '812']);
    expect(Buffer.from(read['812']!.private)).toEqual(preKeys['812']!.private);
    expect(cache.size).toBe(1);
    expect(Buffer.from((await auth.state.keys.get('session', ['5511988887777.0']))['5511988887777.0']!)).toEqual(Buffer.from('record'));
  });

  describe('the key cache in front of the database', () => {
    const keyCache = () => new TtlCache(50_000, 5 * 60_000, systemClock, isUncachedKeyEntry);

    it('answers a cached key without the database; a miss reads it and keeps it', async () => {
      const id = await addInstance();
      await store.setKeys(id, { session: { 'a.0': Buffer.from('stored') } });
      const cache = keyCache();
      const keys = cachedKeyStore(store.keyStore(id), cache);
      expect(Buffer.from((await keys.get('session', ['a.0', 'none.0']))['a.0']!).toString()).toBe('stored');
      expect(cache.size).toBe(1);
      await store.clearKeys(id);
      expect(Buffer.from((await keys.get('session', ['a.0']))['a.0']!).toString()).toBe('stored');
    });

    it('a read made right after a write of an uncached key (not awaited) sees the write', async () => {
      const id = await addInstance();
      const keys = cachedKeyStore(store.keyStore(id), keyCache());
      const pairs = Array.from({ length: 20 }, (_, i) => ({ public: Buffer.alloc(32, i), private: Buffer.alloc(32, i + 1) }));
      const reads = pairs.map(async (pair, i) => {
        void keys.set({ 'pre-key': { [String(i)]: pair } });
        return keys.get('pre-key', [String(i)]);
      });
      const got = await Promise.all(reads);
      got.forEach((read, i) => expect(Buffer.from(read[String(i)]!.private)).toEqual(pairs[i]!.private));
    });

    it('a write that overtakes a missing read leaves its own value in the cache, deletes included', async () => {
      const id = await addInstance();
      await store.setKeys(id, { session: { 'changed.0': Buffer.from('old'), 'deleted.0': Buffer.from('old') } });
      const keys = cachedKeyStore(store.keyStore(id), keyCache());
      // The read misses and waits for the database; the write comes meanwhile.
      const read = keys.get('session', ['changed.0', 'deleted.0']);
      const write = keys.set({ session: { 'changed.0': Buffer.from('new'), 'deleted.0': null } });
      const before = await read;
      expect(Buffer.from(before['changed.0']!).toString()).toBe('old');
      await write;
      const after = await keys.get('session', ['changed.0', 'deleted.0']);
      expect(Buffer.from(after['changed.0']!).toString()).toBe('new');
      expect(after['deleted.0']).toBeUndefined();
    });
  });

  it('reload through authStateFor: a new process sees the same creds and keys (behind its own cache)', async () => {
    const id = await addInstance();
    const first = await authStateFor(store, id, new TtlCache(100, 60_000, systemClock));
    first.state.creds.me = { id: '5511999999999:3@s.whatsapp.net' };
    await first.saveCreds();
    await first.state.keys.set({ 'pre-key': { '7': { public: Buffer.alloc(32, 7), private: Buffer.alloc(32, 8) } } });

    const second = await authStateFor(new WhatsAppAuthStore(storage.db, systemClock), id, new TtlCache(100, 60_000, systemClock));
    expect(second.state.creds.me?.id).toBe('5511999999999:3@s.whatsapp.net');
    expect(Buffer.compare(second.state.creds.noiseKey.public, first.state.creds.noiseKey.public)).toBe(0);
    const got = await second.state.keys.get('pre-key', ['7']);
    expect(Buffer.from(got['7']!.private)).toEqual(Buffer.alloc(32, 8));
    expect(second.isLinked()).toBe(false);
  });

  it('hands on the LID<->phone pairs Baileys stores as keys (its reverse entries skipped) after they are stored', async () => {
    const id = await addInstance();
    const heard: unknown[] = [];
    const auth = await authStateFor(store, id, new TtlCache(100, 60_000, systemClock), async (pairs) => {
      // Heard after the write: the keys are already there.
      expect(await store.getKeys(id, 'lid-mapping', ['5511944443333'])).toEqual({ '5511944443333': '200000000000022' });
      heard.push(...pairs);
    });
    await auth.state.keys.set({ 'lid-mapping': { '5511944443333': '200000000000022', '200000000000022_reverse': '5511944443333' } });
    await auth.state.keys.set({ session: { 'x.0': Buffer.from('s') } });
    expect(heard).toEqual([{ lid: '200000000000022', pn: '5511944443333' }]);
  });

  it('wipe forgets creds and keys but keeps the LID mapping; deleting the instance removes everything', async () => {
    const id = await addInstance();
    await store.saveCreds(id, initAuthCreds());
    await store.setKeys(id, { session: { 'x.0': Buffer.from('s') } });
    const directory = new LidDirectory(store, id);
    await directory.remember([{ lid: '200000000000003@lid', pn: '5511999999999@s.whatsapp.net' }]);

    await store.wipe(id);
    expect(await store.loadCreds(id)).toBeUndefined();
    expect(await store.countKeys(id)).toBe(0);
    expect(await store.findPhones(id, ['200000000000003'])).toEqual([{ lid: '200000000000003', pn: '5511999999999' }]);

    await store.saveCreds(id, initAuthCreds());
    await store.setKeys(id, { session: { 'x.0': Buffer.from('s') } });
    await storage.db.deleteFrom('instances').where('id', '=', id).execute();
    expect(await store.loadCreds(id)).toBeUndefined();
    expect(await store.countKeys(id)).toBe(0);
    expect(await store.findPhones(id, ['200000000000003'])).toEqual([]);
  });

  it('the LID directory resolves from the database in a fresh process', async () => {
    const id = await addInstance();
    await new LidDirectory(store, id).remember([
      { lid: '200000000000003:5@lid', pn: '5511999999999:5@s.whatsapp.net' },
      { pn: '200000000000004@lid', lid: '5511888888888@s.whatsapp.net' },
    ]);
    const fresh = new LidDirectory(new WhatsAppAuthStore(storage.db, systemClock), id);
    expect(fresh.resolve('200000000000003@lid')).toEqual({ jid: '200000000000003@lid', lid: '200000000000003@lid' });
    await fresh.prefetch(['200000000000003@lid', '5511888888888@s.whatsapp.net']);
    expect(fresh.resolve('200000000000003@lid')).toEqual({ jid: '5511999999999@s.whatsapp.net', lid: '200000000000003@lid' });
    expect(fresh.resolve('5511888888888@s.whatsapp.net')).toEqual({ jid: '5511888888888@s.whatsapp.net', lid: '200000000000004@lid' });
  });

  it('the LID directory asks the database once for an address it does not know, until it learns it', async () => {
    const id = await addInstance();
    const counted = new WhatsAppAuthStore(storage.db, systemClock);
    const asked: string[][] = [];
    const findPhones = counted.findPhones.bind(counted);
    const findLids = counted.findLids.bind(counted);
    counted.findPhones = (instanceId, lids) => (asked.push(lids), findPhones(instanceId, lids));
    counted.findLids = (instanceId, pns) => (asked.push(pns), findLids(instanceId, pns));
    const directory = new LidDirectory(counted, id);
    const lid = '200000000000009@lid';
    const phone = '5511777777777@s.whatsapp.net';
    await directory.prefetch([lid, phone]);
    await directory.prefetch([lid, phone, '200000000000010@lid']);
    expect(asked).toEqual([['200000000000009'], ['5511777777777'], ['200000000000010']]);
    expect(directory.resolve(lid)).toEqual({ jid: lid, lid });

    await directory.remember([{ lid, pn: phone }]);
    await directory.prefetch([lid, phone]);
    expect(asked).toHaveLength(3);
    expect(directory.resolve(lid)).toEqual({ jid: phone, lid });
    expect(directory.lidOf(phone)).toBe(lid);
  });
});
