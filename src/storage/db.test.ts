/** A PostgreSQL connection that ends under the gateway fails its statement, never the process. */
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSchemaName, PG_URL, waitFor } from '../../test/support/gateway.js';
import { dropSchema, isDatabaseUnavailable, openStorage, type Storage } from './db.js';

describe('a PostgreSQL connection that ends', () => {
  const schema = newSchemaName();
  const lost: Error[] = [];
  let storage: Storage;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  /** Ends the backends of this test's pool whose current or last statement contains `marker`. */
  const endBackends = async (marker: string) => {
    const pids = await waitFor(
      async () => {
        const { rows } = await admin.query<{ pid: number }>(
          `select pid from pg_stat_activity where query like $1 and query not like '%pg_stat_activity%'`,
          [`%${marker}%`],
        );
        return rows.length > 0 ? rows.map((r) => r.pid) : undefined;
      },
      10_000,
      `a backend running ${marker}`,
    );
    for (const pid of pids) await admin.query('select pg_terminate_backend($1)', [pid]);
  };

  beforeAll(async () => {
    storage = await openStorage(PG_URL, { schema, poolSize: 2, onConnectionLost: (error) => lost.push(error) });
  });
  afterAll(async () => {
    await storage.close();
    await admin.end();
    await dropSchema(PG_URL, schema);
  });

  it('while a statement runs on it: the statement fails as unavailable (503), the loss is told, the next statement runs', async () => {
    const before = lost.length;
    const marker = `${schema}_running`;
    const running = sql`select pg_sleep(30) as ${sql.id(marker)}`.execute(storage.db).then(
      () => undefined,
      (error: unknown) => error,
    );
    await endBackends(marker);
    const error = await running;
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
    await waitFor(() => (lost.length > before ? true : undefined), 10_000, 'the loss to be told');
    const { rows } = await sql<{ n: number }>`select 1 as n`.execute(storage.db);
    expect(rows).toEqual([{ n: 1 }]);
  });

  it('while it waits in the pool: it is dropped, the loss is told, the next statement runs', async () => {
    const before = lost.length;
    const marker = `${schema}_idle`;
    await sql`select 1 as ${sql.id(marker)}`.execute(storage.db);
    await endBackends(marker);
    await waitFor(() => (lost.length > before ? true : undefined), 10_000, 'the loss to be told');
    const results = await Promise.all([1, 2, 3].map((n) => sql<{ n: number }>`select ${n}::int as n`.execute(storage.db)));
    expect(results.map((r) => r.rows[0]?.n)).toEqual([1, 2, 3]);
  });
});
