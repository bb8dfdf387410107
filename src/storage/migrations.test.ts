import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { newSchemaName, PG_URL } from '../../test/support/gateway.js';
import { dropSchema } from './db.js';
import { migrateToLatest } from './migrations.js';

/**
 * A database whose first `times` table listings (Kysely's catalog query over every schema) fail as
 * PostgreSQL fails them when a schema is dropped while they run.
 */
function databaseWhereSchemaVanishes(schema: string, vanishing: string, times: number): Kysely<any> {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2, options: `-c search_path=${schema}` });
  let left = times;
  const connect = pool.connect.bind(pool);
  pool.connect = (async () => {
    const client = await connect();
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    client.query = ((...args: unknown[]) => {
      const text = typeof args[0] === 'string' ? args[0] : '';
      if (text.includes('pg_attribute') && left > 0) {
        left -= 1;
        return Promise.reject(Object.assign(new Error(`schema "${vanishing}" does not exist`), { code: '3F000' }));
      }
      return query(...args);
    }) as typeof client.query;
    return client;
  }) as typeof pool.connect;
  return new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
}

describe('migrations on PostgreSQL', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(PG_URL, schema);
  });

  it('try again when another schema is dropped while Kysely lists every schema, not when ours is missing', async () => {
    const ours = newSchemaName();
    schemas.push(ours);
    const db = databaseWhereSchemaVanishes(ours, 'wg_t_someone_else', 2);
    try {
      await migrateToLatest(db, 'postgres', ours);
      expect(await db.selectFrom('instances').select('id').execute()).toEqual([]);
    } finally {
      await db.destroy();
    }

    const theirs = newSchemaName();
    schemas.push(theirs);
    const failing = databaseWhereSchemaVanishes(theirs, theirs, 1);
    try {
      await expect(migrateToLatest(failing, 'postgres', theirs)).rejects.toMatchObject({ code: '3F000' });
    } finally {
      await failing.destroy();
    }
  });
});
