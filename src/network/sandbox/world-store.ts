/**
 * Keeps the sandbox world's documents (accounts, groups, communities, newsletters, chat settings,
 * call logs) in the `sandbox_world` table, so what users build in the sandbox survives a restart.
 * Writes of one document are chained so they land in the order they were made.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../clock.js';
import type { Database } from '../../storage/schema.js';

export type WorldDocumentKind = 'account' | 'group' | 'community' | 'newsletter' | 'chats' | 'calls';

export interface WorldDocument {
  kind: WorldDocumentKind;
  id: string;
  body: unknown;
}

/** Where the world keeps its documents; the in-memory twin is for unit tests. */
export interface WorldStore {
  loadAll(): Promise<WorldDocument[]>;
  /** One document as stored now (another gateway process may have written it). */
  load(kind: WorldDocumentKind, id: string): Promise<WorldDocument | undefined>;
  save(kind: WorldDocumentKind, id: string, body: unknown): Promise<void>;
  remove(kind: WorldDocumentKind, id: string): Promise<void>;
}

export class SqlWorldStore implements WorldStore {
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async loadAll(): Promise<WorldDocument[]> {
    const rows = await this.db.selectFrom('sandbox_world').selectAll().execute();
    return rows.map((row) => ({ kind: row.kind as WorldDocumentKind, id: row.id, body: JSON.parse(row.body) as unknown }));
  }

  async load(kind: WorldDocumentKind, id: string): Promise<WorldDocument | undefined> {
    const row = await this.db.selectFrom('sandbox_world').select('body').where('kind', '=', kind).where('id', '=', id).executeTakeFirst();
    return row ? { kind, id, body: JSON.parse(row.body) as unknown } : undefined;
  }

  save(kind: WorldDocumentKind, id: string, body: unknown): Promise<void> {
    // Serialised now, so later changes to the live object do not leak into this write.
    const json = JSON.stringify(body);
    return this.chain(kind, id, async () => {
      const updatedAt = this.clock.now();
      await this.db
        .insertInto('sandbox_world')
        .values({ kind, id, body: json, updated_at: updatedAt })
        .onConflict((oc) => oc.columns(['kind', 'id']).doUpdateSet({ body: json, updated_at: updatedAt }))
        .execute();
    });
  }

  remove(kind: WorldDocumentKind, id: string): Promise<void> {
    return this.chain(kind, id, async () => {
      await this.db.deleteFrom('sandbox_world').where('kind', '=', kind).where('id', '=', id).execute();
    });
  }

  private chain(kind: string, id: string, write: () => Promise<void>): Promise<void> {
    const key = `${kind}\u0000${id}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(write, write);
    const settled = next.catch(() => undefined);
    this.chains.set(key, settled);
    void settled.then(() => {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    });
    return next;
  }
}

export class MemoryWorldStore implements WorldStore {
  readonly documents = new Map<string, WorldDocument>();

  loadAll(): Promise<WorldDocument[]> {
    return Promise.resolve([...this.documents.values()].map((doc) => ({ ...doc, body: structuredClone(doc.body) })));
  }

  load(kind: WorldDocumentKind, id: string): Promise<WorldDocument | undefined> {
    const doc = this.documents.get(`${kind}:${id}`);
    return Promise.resolve(doc ? { ...doc, body: structuredClone(doc.body) } : undefined);
  }

  save(kind: WorldDocumentKind, id: string, body: unknown): Promise<void> {
    this.documents.set(`${kind}:${id}`, { kind, id, body: structuredClone(body) });
    return Promise.resolve();
  }

  remove(kind: WorldDocumentKind, id: string): Promise<void> {
    this.documents.delete(`${kind}:${id}`);
    return Promise.resolve();
  }
}
