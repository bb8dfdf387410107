/** The tables of /send/batch: `send_batches` and their `send_batch_items`. Kysely only; no rules here. */
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../storage/schema.js';

export type BatchRow = Selectable<Database['send_batches']>;
export type BatchItemRow = Selectable<Database['send_batch_items']>;
export type BatchStatus = 'queued' | 'running' | 'completed' | 'cancelled';
export type BatchItemStatus = 'pending' | 'sending' | 'sent' | 'failed' | 'cancelled';

export interface NewBatch {
  id: string;
  instanceId: string;
  intervalMs: number;
  createdAt: number;
  /** In order; `payload` is the item's JSON. */
  items: { number: string; payload: string }[];
}

export class BatchRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** The batch and its items, in one transaction. */
  async insert(batch: NewBatch): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('send_batches')
        .values({
          id: batch.id,
          instance_id: batch.instanceId,
          status: 'queued',
          total: batch.items.length,
          interval_ms: batch.intervalMs,
          created_at: batch.createdAt,
          started_at: null,
          finished_at: null,
        })
        .execute();
      const rows = batch.items.map((item, position) => ({
        batch_id: batch.id,
        position,
        number: item.number,
        payload: item.payload,
        status: 'pending',
        message_id: null,
        error: null,
        sent_at: null,
      }));
      for (let i = 0; i < rows.length; i += 200)
        await trx
          .insertInto('send_batch_items')
          .values(rows.slice(i, i + 200))
          .execute();
    });
  }

  find(instanceId: string, batchId: string): Promise<BatchRow | undefined> {
    return this.db
      .selectFrom('send_batches')
      .selectAll()
      .where('id', '=', batchId)
      .where('instance_id', '=', instanceId)
      .executeTakeFirst();
  }

  items(batchId: string): Promise<BatchItemRow[]> {
    return this.db.selectFrom('send_batch_items').selectAll().where('batch_id', '=', batchId).orderBy('position').execute();
  }

  /** Pending items become cancelled and the batch is finished. */
  async cancel(batchId: string, finishedAt: number): Promise<void> {
    await this.db
      .updateTable('send_batch_items')
      .set({ status: 'cancelled' })
      .where('batch_id', '=', batchId)
      .where('status', '=', 'pending')
      .execute();
    await this.db.updateTable('send_batches').set({ status: 'cancelled', finished_at: finishedAt }).where('id', '=', batchId).execute();
  }

  /** Batches not finished yet (queued or running), of every instance. */
  open(): Promise<Pick<BatchRow, 'id' | 'instance_id'>[]> {
    return this.db.selectFrom('send_batches').select(['id', 'instance_id']).where('status', 'in', ['queued', 'running']).execute();
  }

  /** Items left `sending` in these batches become failed with `error`. */
  async failInterrupted(batchIds: string[], error: string): Promise<void> {
    if (batchIds.length === 0) return;
    await this.db
      .updateTable('send_batch_items')
      .set({ status: 'failed', error })
      .where('status', '=', 'sending')
      .where('batch_id', 'in', batchIds)
      .execute();
  }

  /** The instance's oldest unfinished batch. */
  nextOpen(instanceId: string): Promise<BatchRow | undefined> {
    return this.db
      .selectFrom('send_batches')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('status', 'in', ['queued', 'running'])
      .orderBy('created_at')
      .orderBy('id')
      .executeTakeFirst();
  }

  async markRunning(batchId: string, startedAt: number): Promise<void> {
    await this.db.updateTable('send_batches').set({ status: 'running', started_at: startedAt }).where('id', '=', batchId).execute();
  }

  /** A running batch becomes completed (a cancelled one stays cancelled). */
  async markCompleted(batchId: string, finishedAt: number): Promise<void> {
    await this.db
      .updateTable('send_batches')
      .set({ status: 'completed', finished_at: finishedAt })
      .where('id', '=', batchId)
      .where('status', '=', 'running')
      .execute();
  }

  nextPendingItem(batchId: string): Promise<BatchItemRow | undefined> {
    return this.db
      .selectFrom('send_batch_items')
      .selectAll()
      .where('batch_id', '=', batchId)
      .where('status', '=', 'pending')
      .orderBy('position')
      .executeTakeFirst();
  }

  /** Moves a pending item to `sending`; false when it is no longer pending (cancelled meanwhile). */
  async claimItem(batchId: string, position: number): Promise<boolean> {
    const claimed = await this.db
      .updateTable('send_batch_items')
      .set({ status: 'sending' })
      .where('batch_id', '=', batchId)
      .where('position', '=', position)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(claimed.numUpdatedRows) > 0;
  }

  async finishItem(
    batchId: string,
    position: number,
    patch: { status: 'sent' | 'failed'; message_id?: string; sent_at?: number; error?: string },
  ): Promise<void> {
    await this.db.updateTable('send_batch_items').set(patch).where('batch_id', '=', batchId).where('position', '=', position).execute();
  }
}
