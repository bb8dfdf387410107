/**
 * The linked-device state of WhatsApp instances, in Waygate's database (SQLite or PostgreSQL): Baileys'
 * creds (one JSON row per instance) and its Signal keys with SignalKeyStore semantics (get returns only
 * what exists; set writes every value and deletes every null, all in one transaction), plus the
 * LID <-> phone-number mapping. Values are BufferJSON text so binary keys survive the round trip.
 *
 * `authStateFor` gives Baileys the `{ creds, keys }` it wants, with a per-instance key cache in front
 * of the database; that cache belongs to the session, not to a socket, so reconnects keep it warm.
 */
import {
  BufferJSON,
  initAuthCreds,
  proto,
  type AuthenticationCreds,
  type AuthenticationState,
  type SignalDataSet,
  type SignalDataTypeMap,
  type SignalKeyStore,
} from 'baileys';
import type { Insertable, Kysely } from 'kysely';
import type { Clock } from '../../clock.js';
import { passFence, type WriteFence } from '../../storage/fence.js';
import { CompiledInsert } from '../../storage/compiled-statements.js';
import type { Database, WhatsAppAuthKeysTable } from '../../storage/schema.js';
import { SerialLock, type TtlCache } from './caches.js';
import { rememberKeyPair } from './key-agreement.js';

type KeyType = keyof SignalDataTypeMap;

/** A key's new value in `setKeys` (BufferJSON text), or null to delete it. */
type KeyWrite = { type: string; id: string; value: string | null };

/** Rows per statement: well under SQLite's and PostgreSQL's bound-parameter limits. */
const CHUNK = 400;

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function serialise(value: unknown): string {
  return JSON.stringify(value, BufferJSON.replacer);
}

export function deserialise<T>(text: string): T {
  return JSON.parse(text, BufferJSON.reviver) as T;
}

export interface LidPair {
  /** User part of the LID (`123456789012345` of `123456789012345@lid`). */
  lid: string;
  /** User part of the phone address (digits with country code). */
  pn: string;
}

export class WhatsAppAuthStore {
  /** Built once per row count: a message's decryption writes its Signal session each time. */
  private readonly upsertKeys = new CompiledInsert<Insertable<WhatsAppAuthKeysTable>>((db, rows) =>
    db
      .insertInto('whatsapp_auth_keys')
      .values(rows)
      .onConflict((oc) => oc.columns(['instance_id', 'type', 'key_id']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value') }))),
  );

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    /** Cluster mode: only the instance's owner writes its device keys (storage/fence.ts). */
    private readonly fence?: WriteFence,
  ) {}

  async loadCreds(instanceId: string): Promise<AuthenticationCreds | undefined> {
    const row = await this.db.selectFrom('whatsapp_auth_creds').select('creds').where('instance_id', '=', instanceId).executeTakeFirst();
    return row ? deserialise<AuthenticationCreds>(row.creds) : undefined;
  }

  async saveCreds(instanceId: string, creds: AuthenticationCreds): Promise<void> {
    const text = serialise(creds);
    const now = this.clock.now();
    const write = (db: Kysely<Database>) =>
      db
        .insertInto('whatsapp_auth_creds')
        .values({ instance_id: instanceId, creds: text, updated_at: now })
        .onConflict((oc) => oc.column('instance_id').doUpdateSet({ creds: text, updated_at: now }))
        .execute();
    if (!this.fence) {
      await write(this.db);
      return;
    }
    await this.db.transaction().execute(async (trx) => {
      await passFence(this.fence, trx, [instanceId]);
      await write(trx);
    });
  }

  async getKeys<T extends KeyType>(instanceId: string, type: T, ids: string[]): Promise<Record<string, SignalDataTypeMap[T]>> {
    const found: Record<string, SignalDataTypeMap[T]> = {};
    for (const part of chunks([...new Set(ids)])) {
      const rows = await this.db
        .selectFrom('whatsapp_auth_keys')
        .select(['key_id', 'value'])
        .where('instance_id', '=', instanceId)
        .where('type', '=', type)
        .where('key_id', 'in', part)
        .execute();
      for (const row of rows) {
        let value = deserialise<SignalDataTypeMap[T]>(row.value);
        // Baileys expects the protobuf class here, not the plain object JSON gives back.
        if (type === 'app-state-sync-key')
          value = proto.Message.AppStateSyncKeyData.fromObject(value as object) as unknown as SignalDataTypeMap[T];
        found[row.key_id] = value;
      }
    }
    return found;
  }

  /**
   * Writes one SignalDataSet atomically: values are upserted, nulls deleted. All row operations run in
   * one global order (type, then id), split into runs of upserts and deletes, so two concurrent
   * transactions on PostgreSQL always lock rows in the same order and cannot deadlock.
   */
  async setKeys(instanceId: string, data: SignalDataSet): Promise<void> {
    const ops: KeyWrite[] = [];
    for (const type of Object.keys(data).sort() as KeyType[]) {
      const entries = data[type];
      if (!entries) continue;
      for (const id of Object.keys(entries).sort()) {
        const value = entries[id];
        ops.push({ type, id, value: value === null || value === undefined ? null : serialise(value) });
      }
    }
    if (ops.length === 0) return;
    // Consecutive operations of one kind (and, for deletes, one type) become one statement.
    const runs: KeyWrite[][] = [];
    for (const op of ops) {
      const run = runs[runs.length - 1];
      const last = run?.[run.length - 1];
      const sameRun =
        last && run.length < CHUNK && (last.value === null) === (op.value === null) && (op.value !== null || last.type === op.type);
      if (sameRun) run.push(op);
      else runs.push([op]);
    }
    // One statement is atomic on its own: a set of one run (a message's Signal session, the usual
    // case) needs no transaction around it, unless the fence must be passed in the same one.
    if (runs.length === 1 && !this.fence) {
      await this.writeKeys(this.db, instanceId, runs[0]!);
      return;
    }
    await this.db.transaction().execute(async (trx) => {
      await passFence(this.fence, trx, [instanceId]);
      for (const run of runs) await this.writeKeys(trx, instanceId, run);
    });
  }

  /** One run of `setKeys`: upserts, or deletes of one type. */
  private async writeKeys(db: Kysely<Database>, instanceId: string, run: KeyWrite[]): Promise<void> {
    const first = run[0]!;
    if (first.value === null) {
      await db
        .deleteFrom('whatsapp_auth_keys')
        .where('instance_id', '=', instanceId)
        .where('type', '=', first.type)
        .where(
          'key_id',
          'in',
          run.map((op) => op.id),
        )
        .execute();
      return;
    }
    await this.upsertKeys.execute(
      db,
      run.map((op) => ({ instance_id: instanceId, type: op.type, key_id: op.id, value: op.value! })),
    );
  }

  async clearKeys(instanceId: string): Promise<void> {
    await this.db.deleteFrom('whatsapp_auth_keys').where('instance_id', '=', instanceId).execute();
  }

  /** Forgets the linked device (creds and keys) in one transaction; the LID mapping is kept. */
  async wipe(instanceId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await passFence(this.fence, trx, [instanceId]);
      await trx.deleteFrom('whatsapp_auth_keys').where('instance_id', '=', instanceId).execute();
      await trx.deleteFrom('whatsapp_auth_creds').where('instance_id', '=', instanceId).execute();
    });
  }

  /** Everything of an instance, mapping included (instance deletion; the FK cascade does it too). */
  async forget(instanceId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('whatsapp_auth_keys').where('instance_id', '=', instanceId).execute();
      await trx.deleteFrom('whatsapp_auth_creds').where('instance_id', '=', instanceId).execute();
      await trx.deleteFrom('whatsapp_lid_mappings').where('instance_id', '=', instanceId).execute();
    });
  }

  async countKeys(instanceId: string): Promise<number> {
    const row = await this.db
      .selectFrom('whatsapp_auth_keys')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('instance_id', '=', instanceId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async saveLidPairs(instanceId: string, pairs: LidPair[]): Promise<void> {
    const unique = new Map(pairs.map((pair) => [pair.lid, pair]));
    if (unique.size === 0) return;
    const now = this.clock.now();
    const rows = [...unique.values()]
      .sort((a, b) => a.lid.localeCompare(b.lid))
      .map((pair) => ({ instance_id: instanceId, lid: pair.lid, pn: pair.pn, updated_at: now }));
    await this.db.transaction().execute(async (trx) => {
      for (const part of chunks(rows)) {
        await trx
          .insertInto('whatsapp_lid_mappings')
          .values(part)
          .onConflict((oc) =>
            oc
              .columns(['instance_id', 'lid'])
              .doUpdateSet((eb) => ({ pn: eb.ref('excluded.pn'), updated_at: eb.ref('excluded.updated_at') })),
          )
          .execute();
      }
    });
  }

  async findPhones(instanceId: string, lids: string[]): Promise<LidPair[]> {
    const out: LidPair[] = [];
    for (const part of chunks([...new Set(lids)])) {
      out.push(
        ...(await this.db
          .selectFrom('whatsapp_lid_mappings')
          .select(['lid', 'pn'])
          .where('instance_id', '=', instanceId)
          .where('lid', 'in', part)
          .execute()),
      );
    }
    return out;
  }

  async findLids(instanceId: string, pns: string[]): Promise<LidPair[]> {
    const out: LidPair[] = [];
    for (const part of chunks([...new Set(pns)])) {
      out.push(
        ...(await this.db
          .selectFrom('whatsapp_lid_mappings')
          .select(['lid', 'pn'])
          .where('instance_id', '=', instanceId)
          .where('pn', 'in', part)
          .execute()),
      );
    }
    return out;
  }

  /** The raw SignalKeyStore of one instance (no cache). */
  keyStore(instanceId: string): SignalKeyStore {
    return {
      get: (type, ids) => this.getKeys(instanceId, type, ids),
      set: (data) => this.setKeys(instanceId, data),
      clear: () => this.clearKeys(instanceId),
    };
  }
}

/** The auth state Baileys reads and mutates, and how its changes reach the database. */
export interface InstanceAuthState {
  state: AuthenticationState;
  /** Persists the current creds; calls are queued so writes land in the order made. */
  saveCreds(): Promise<void>;
  /** True once a phone has linked this device (creds carry the signed account identity). */
  isLinked(): boolean;
}

/**
 * Loads (or creates) an instance's creds and builds its key store: the database store behind
 * `cachedKeyStore` using `keyCache`, which the caller keeps across sockets. `learnLidPairs` hears
 * every LID<->phone pair Baileys stores as it is stored.
 */
export async function authStateFor(
  store: WhatsAppAuthStore,
  instanceId: string,
  keyCache: TtlCache,
  learnLidPairs?: (pairs: LidPair[]) => Promise<void>,
): Promise<InstanceAuthState> {
  const creds = (await store.loadCreds(instanceId)) ?? initAuthCreds();
  // Its noise key is agreed at every login (key-agreement.ts).
  rememberKeyPair(creds.noiseKey);
  const cached = cachedKeyStore(store.keyStore(instanceId), keyCache);
  const keys: SignalKeyStore = learnLidPairs
    ? {
        ...cached,
        async set(data) {
          await cached.set(data);
          const pairs = lidPairsIn(data);
          if (pairs.length > 0) await learnLidPairs(pairs);
        },
      }
    : cached;
  const credsWrites = new SerialLock();
  return {
    state: { creds, keys },
    saveCreds() {
      return credsWrites.run(() => store.saveCreds(instanceId, creds));
    },
    isLinked: () => Boolean(creds.me?.id && creds.account),
  };
}

/**
 * The pairs in a write of Baileys' `lid-mapping` keys (`<pn user>` -> `<lid user>`, and the reverse
 * entry `<lid user>_reverse` -> `<pn user>`). Baileys stores what a history sync maps this way
 * before it emits the history, and its event buffer drops `lidPnMappings` from a buffered history
 * event: the key store is where every pair shows up.
 */
export function lidPairsIn(data: SignalDataSet): LidPair[] {
  const entries = data['lid-mapping'];
  if (!entries) return [];
  const pairs: LidPair[] = [];
  for (const [pn, lid] of Object.entries(entries)) {
    if (pn.endsWith('_reverse') || typeof lid !== 'string' || !lid) continue;
    pairs.push({ lid, pn });
  }
  return pairs;
}

/**
 * An instance's key store with `cache` in front of it (entries named `<type>.<id>`, as
 * `isUncachedKeyEntry` expects). Baileys' own wrapper (makeCacheableSignalKeyStore) takes an async
 * mutex around every get and set, cache hits included: each message of a resumed session paid it
 * several times. Here a hit is a map read. What reaches the database still goes one call after
 * another, in call order, so a read that misses sees every write made before it; and a read that a
 * write overtook (the write came while it waited) leaves the cache to the write's value.
 */
export function cachedKeyStore(store: SignalKeyStore, cache: TtlCache): SignalKeyStore {
  const order = new SerialLock();
  let reading = 0;
  const writtenWhileReading = new Set<string>();
  return {
    async get(type, ids) {
      const found: Record<string, SignalDataTypeMap[typeof type]> = {};
      let missing: string[] | undefined;
      for (const id of ids) {
        const value = cache.get<SignalDataTypeMap[typeof type]>(`${type}.${id}`);
        if (value === undefined) (missing ??= []).push(id);
        else found[id] = value;
      }
      if (!missing) return found;
      const wanted = missing;
      reading++;
      try {
        const fetched = await order.run(async () => store.get(type, wanted));
        for (const id of wanted) {
          const value = fetched[id];
          if (!value) continue;
          found[id] = value;
          const key = `${type}.${id}`;
          if (!writtenWhileReading.has(key)) cache.set(key, value);
        }
      } finally {
        if (--reading === 0) writtenWhileReading.clear();
      }
      return found;
    },
    set(data) {
      for (const type in data) {
        const entries = data[type as KeyType] ?? {};
        for (const id in entries) {
          const key = `${type}.${id}`;
          const value = entries[id];
          if (value === null || value === undefined) cache.del(key);
          else cache.set(key, value);
          if (reading > 0) writtenWhileReading.add(key);
        }
      }
      return order.run(async () => store.set(data));
    },
    clear() {
      cache.flushAll();
      return order.run(async () => {
        await store.clear?.();
      });
    },
  };
}
