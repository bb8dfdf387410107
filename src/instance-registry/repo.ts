/** The instances and instance_tokens tables. */
import type { Kysely } from 'kysely';
import { passFence, type WriteFence } from '../storage/fence.js';
import type { Database, InstanceRow, InstanceUpdate, NewInstanceRow } from '../storage/schema.js';

export interface TokenRecord {
  instanceId: string;
  validUntil: number | null;
}

export class InstanceRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: NewInstanceRow, tokenHash: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('instances').values(row).execute();
      await trx
        .insertInto('instance_tokens')
        .values({ hash: tokenHash, instance_id: row.id, valid_until: null, created_at: row.created_at })
        .execute();
    });
  }

  findById(id: string): Promise<InstanceRow | undefined> {
    return this.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findByName(name: string): Promise<InstanceRow | undefined> {
    return this.db.selectFrom('instances').selectAll().where('name', '=', name).executeTakeFirst();
  }

  findByNumber(number: string): Promise<InstanceRow | undefined> {
    return this.db.selectFrom('instances').selectAll().where('number', '=', number).executeTakeFirst();
  }

  list(offset: number, limit: number): Promise<InstanceRow[]> {
    return this.db.selectFrom('instances').selectAll().orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute();
  }

  listByStatus(network: string, statuses: string[]): Promise<InstanceRow[]> {
    return this.db.selectFrom('instances').selectAll().where('network', '=', network).where('status', 'in', statuses).execute();
  }

  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('instances')
      .select(['status', (eb) => eb.fn.countAll().as('n')])
      .groupBy('status')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
  }

  async countByNetwork(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('instances')
      .select(['network', (eb) => eb.fn.countAll().as('n')])
      .groupBy('network')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.network, Number(row.n)]));
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('instances')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async update(id: string, patch: InstanceUpdate, fence?: WriteFence): Promise<boolean> {
    if (fence) {
      // Only the instance's owner writes what the network said (cluster mode: storage/fence.ts).
      return this.db.transaction().execute(async (trx) => {
        await passFence(fence, trx, [id]);
        const result = await trx.updateTable('instances').set(patch).where('id', '=', id).executeTakeFirst();
        return Number(result.numUpdatedRows) > 0;
      });
    }
    const result = await this.db.updateTable('instances').set(patch).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Deletes the instance; tokens, outbox rows, pending deliveries and dead letters go with it (FK cascade). */
  async delete(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      // outbox_pending has no FK to instances (it hangs off outbox.seq); clear it explicitly first.
      await trx.deleteFrom('outbox_pending').where('instance_id', '=', id).execute();
      const result = await trx.deleteFrom('instances').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  async findToken(hash: string): Promise<TokenRecord | undefined> {
    const row = await this.db
      .selectFrom('instance_tokens')
      .select(['instance_id', 'valid_until'])
      .where('hash', '=', hash)
      .executeTakeFirst();
    return row ? { instanceId: row.instance_id, validUntil: row.valid_until } : undefined;
  }

  /** Turns the current primary token into a grace token and stores the new primary, atomically. */
  async rotateToken(instanceId: string, newHash: string, graceUntil: number, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('instance_tokens')
        .set({ valid_until: graceUntil })
        .where('instance_id', '=', instanceId)
        .where('valid_until', 'is', null)
        .execute();
      await trx
        .insertInto('instance_tokens')
        .values({ hash: newHash, instance_id: instanceId, valid_until: null, created_at: now })
        .execute();
    });
  }
}
