/** The backfill_jobs table: each job's range, target, status and cursor (a restart resumes from it). */
import type { Kysely, Selectable } from 'kysely';
import type { BackfillJobsTable, Database } from '../../storage/schema.js';

export type BackfillJobRow = Selectable<BackfillJobsTable>;

const NUMBERS: (keyof BackfillJobRow)[] = [
  'from_seq',
  'to_seq',
  'since_at',
  'until_at',
  'rate_per_second',
  'cursor_seq',
  'total',
  'delivered',
  'created_at',
  'updated_at',
  'finished_at',
];

/** PostgreSQL answers bigint columns as strings. */
function toJob(row: BackfillJobRow): BackfillJobRow {
  const out = { ...row } as Record<string, unknown>;
  for (const key of NUMBERS) if (out[key] !== null) out[key] = Number(out[key]);
  return out as unknown as BackfillJobRow;
}

export class BackfillRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: BackfillJobRow): Promise<void> {
    await this.db.insertInto('backfill_jobs').values(row).execute();
  }

  async get(id: string): Promise<BackfillJobRow | undefined> {
    const row = await this.db.selectFrom('backfill_jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toJob(row) : undefined;
  }

  async list(filter: { instanceId?: string | undefined; status?: string | undefined }, offset: number, limit: number) {
    let query = this.db.selectFrom('backfill_jobs');
    if (filter.instanceId) query = query.where('instance_id', '=', filter.instanceId);
    if (filter.status) query = query.where('status', '=', filter.status);
    const [rows, count] = await Promise.all([
      query.selectAll().orderBy('created_at', 'desc').orderBy('id').offset(offset).limit(limit).execute(),
      query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(toJob), total: Number(count.n) };
  }

  /** Jobs to resume after a restart. */
  async unfinished(): Promise<BackfillJobRow[]> {
    return (
      await this.db.selectFrom('backfill_jobs').selectAll().where('status', 'in', ['queued', 'running']).orderBy('created_at').execute()
    ).map(toJob);
  }

  async progress(id: string, cursorSeq: number, delivered: number, lastEventId: string, at: number): Promise<void> {
    await this.db
      .updateTable('backfill_jobs')
      .set({ cursor_seq: cursorSeq, delivered, last_event_id: lastEventId, updated_at: at })
      .where('id', '=', id)
      .execute();
  }

  async setStatus(id: string, status: string, at: number, error: string | null = null): Promise<void> {
    const finished = status === 'completed' || status === 'cancelled' || status === 'failed';
    await this.db
      .updateTable('backfill_jobs')
      .set({ status, updated_at: at, error, ...(finished ? { finished_at: at } : {}) })
      .where('id', '=', id)
      .execute();
  }

  /** Cancels a job that has not finished; false when it had. */
  async cancel(id: string, at: number): Promise<boolean> {
    const result = await this.db
      .updateTable('backfill_jobs')
      .set({ status: 'cancelled', updated_at: at, finished_at: at })
      .where('id', '=', id)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}
