/** The dead_letters table: webhook events whose delivery failed every automatic attempt. */
import type { Kysely } from 'kysely';
import type { Database, DeadLetterRow } from '../storage/schema.js';

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
}
