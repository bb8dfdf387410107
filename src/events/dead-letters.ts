/** The dead_letters table: webhook events whose delivery failed every automatic attempt. */
import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { Database, DeadLetterRow } from '../storage/schema.js';

/** Which dead letters an admin bulk operation or listing addresses; every field narrows. */
export interface DeadLetterFilter {
  instanceId?: string | undefined;
  /** The delivery channel (`webhook`, ...). */
  sink?: string | undefined;
  event?: string | undefined;
  /** Stored at or after / at or before (epoch ms). */
  since?: number | undefined;
  until?: number | undefined;
  ids?: string[] | undefined;
}

function narrow<O>(query: SelectQueryBuilder<Database, 'dead_letters', O>, filter: DeadLetterFilter) {
  let q = query;
  if (filter.instanceId !== undefined) q = q.where('instance_id', '=', filter.instanceId);
  if (filter.sink !== undefined) q = q.where('sink', '=', filter.sink);
  if (filter.event !== undefined) q = q.where('event_type', '=', filter.event);
  if (filter.since !== undefined) q = q.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) q = q.where('created_at', '<=', filter.until);
  if (filter.ids !== undefined) q = q.where('id', 'in', filter.ids.length > 0 ? filter.ids : ['']);
  return q;
}

export interface DeadLetter {
  id: string;
  instanceId: string;
  sink: string;
  eventId: string;
  event: string;
  body: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  firstAttemptAt: number;
  lastAttemptAt: number;
  createdAt: number;
}

function toDeadLetter(row: DeadLetterRow): DeadLetter {
  return {
    id: row.id,
    instanceId: row.instance_id,
    sink: row.sink,
    eventId: row.event_id,
    event: row.event_type,
    body: row.body,
    attempts: row.attempts,
    lastStatus: row.last_status,
    lastError: row.last_error,
    firstAttemptAt: row.first_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    createdAt: row.created_at,
  };
}

export class DeadLetterStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Moves a pending delivery to the dead letters, in one transaction with the removal of its pending row. */
  async bury(letter: DeadLetter, seq: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('dead_letters')
        .values({
          id: letter.id,
          instance_id: letter.instanceId,
          sink: letter.sink,
          event_id: letter.eventId,
          event_type: letter.event,
          body: letter.body,
          attempts: letter.attempts,
          last_status: letter.lastStatus,
          last_error: letter.lastError,
          first_attempt_at: letter.firstAttemptAt,
          last_attempt_at: letter.lastAttemptAt,
          created_at: letter.createdAt,
        })
        .execute();
      await trx.deleteFrom('outbox_pending').where('seq', '=', seq).where('sink', '=', letter.sink).execute();
    });
  }

  async list(instanceId: string, offset: number, limit: number): Promise<{ items: DeadLetter[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.db
        .selectFrom('dead_letters')
        .selectAll()
        .where('instance_id', '=', instanceId)
        .orderBy('created_at')
        .orderBy('id')
        .offset(offset)
        .limit(limit)
        .execute(),
      this.db
        .selectFrom('dead_letters')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('instance_id', '=', instanceId)
        .executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(toDeadLetter), total: Number(count.n) };
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    const row = await this.db.selectFrom('dead_letters').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toDeadLetter(row) : undefined;
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('dead_letters').where('id', '=', id).execute();
  }

  async recordRetryFailure(id: string, attempts: number, at: number, status: number | null, error: string): Promise<void> {
    await this.db
      .updateTable('dead_letters')
      .set({ attempts, last_attempt_at: at, last_status: status, last_error: error })
      .where('id', '=', id)
      .execute();
  }

  /** Dead letters across instances matching the filter, oldest first, paged. */
  async search(filter: DeadLetterFilter, offset: number, limit: number): Promise<{ items: DeadLetter[]; total: number }> {
    const [rows, count] = await Promise.all([
      narrow(this.db.selectFrom('dead_letters').selectAll(), filter)
        .orderBy('created_at')
        .orderBy('id')
        .offset(offset)
        .limit(limit)
        .execute(),
      narrow(
        this.db.selectFrom('dead_letters').select((eb) => eb.fn.countAll().as('n')),
        filter,
      ).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(toDeadLetter), total: Number(count.n) };
  }

  /** Ids of the dead letters matching the filter, oldest first, at most `limit`. */
  async idsMatching(filter: DeadLetterFilter, limit: number): Promise<string[]> {
    const rows = await narrow(this.db.selectFrom('dead_letters').select('id'), filter)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /** Deletes every dead letter matching the filter; returns how many. */
  async purge(filter: DeadLetterFilter): Promise<number> {
    const ids = narrow(this.db.selectFrom('dead_letters').select('id'), filter);
    const result = await this.db.deleteFrom('dead_letters').where('id', 'in', ids).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Dead letters per instance. */
  async countByInstance(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('dead_letters')
      .select(['instance_id', (eb) => eb.fn.countAll().as('n')])
      .groupBy('instance_id')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.instance_id, Number(row.n)]));
  }

  /** Dead letters per delivery channel. */
  async countBySink(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('dead_letters')
      .select(['sink', (eb) => eb.fn.countAll().as('n')])
      .groupBy('sink')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.sink, Number(row.n)]));
  }
}
