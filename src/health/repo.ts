/** Per-instance counts of the event tables (read only): deliveries waiting and dead letters. */
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.js';

export interface BacklogCounts {
  backlog: Map<string, number>;
  deadLetters: Map<string, number>;
}

export async function backlogCounts(db: Kysely<Database>): Promise<BacklogCounts> {
  const [pending, dead] = await Promise.all([
    db
      .selectFrom('outbox_pending')
      .select(['instance_id', (eb) => eb.fn.countAll().as('n')])
      .groupBy('instance_id')
      .execute(),
    db
      .selectFrom('dead_letters')
      .select(['instance_id', (eb) => eb.fn.countAll().as('n')])
      .groupBy('instance_id')
      .execute(),
  ]);
  // PostgreSQL answers counts as strings.
  return {
    backlog: new Map(pending.map((row) => [row.instance_id, Number(row.n)])),
    deadLetters: new Map(dead.map((row) => [row.instance_id, Number(row.n)])),
  };
}
