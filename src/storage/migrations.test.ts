import { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { newSchemaName, PG_URL } from '../../test/support/gateway.js';
import { dropSchema, openStorage } from './db.js';
import { SearchPathPostgresDialect } from './search-path.js';

describe('migrations on PostgreSQL', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(PG_URL, schema);
  });

  it('the introspector the migrator asks sees the search path only, with its columns', async () => {
    const ours = newSchemaName();
    const theirs = newSchemaName();
    schemas.push(ours, theirs);
    const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
    await admin.query(`create schema ${ours}; create schema ${theirs};
      create table ${ours}.notes (id serial primary key, body text not null, at bigint default 0, tag text);
      create table ${ours}.kysely_migration (name text primary key);
      create view ${ours}.bodies as select body from ${ours}.notes;
      create table ${theirs}.secrets (id bigint generated always as identity, value text)`);
    await admin.end();
    const db = new Kysely<any>({
      dialect: new SearchPathPostgresDialect({
        pool: new pg.Pool({ connectionString: PG_URL, max: 1, options: `-c search_path=${ours}` }),
      }),
    });
    try {
      expect(await db.introspection.getSchemas()).toEqual([{ name: ours }]);
      const tables = await db.introspection.getTables();
      expect(tables.map((t) => [t.schema, t.name, t.isView])).toEqual([
        [ours, 'bodies', true],
        [ours, 'notes', false],
      ]);
      expect(tables[1]?.columns).toEqual([
        { name: 'id', dataType: 'int4', dataTypeSchema: 'pg_catalog', isNullable: false, hasDefaultValue: true, isAutoIncrementing: true },
        {
          name: 'body',
          dataType: 'text',
          dataTypeSchema: 'pg_catalog',
          isNullable: false,
          hasDefaultValue: false,
          isAutoIncrementing: false,
        },
        { name: 'at', dataType: 'int8', dataTypeSchema: 'pg_catalog', isNullable: true, hasDefaultValue: true, isAutoIncrementing: false },
        {
          name: 'tag',
          dataType: 'text',
          dataTypeSchema: 'pg_catalog',
          isNullable: true,
          hasDefaultValue: false,
          isAutoIncrementing: false,
        },
      ]);
      const withKysely = await db.introspection.getTables({ withInternalKyselyTables: true });
      expect(withKysely.map((t) => t.name)).toEqual(['bodies', 'kysely_migration', 'notes']);
    } finally {
      await db.destroy();
    }
  });

  it('a fresh schema migrates while other schemas are created and dropped beside it', async () => {
    // Kysely's own introspector listed every schema's tables with functions that look each one up
    // again by name: another test run dropping its schema meanwhile failed a gateway's start.
    const churn = new pg.Pool({ connectionString: PG_URL, max: 3 });
    let stop = false;
    const churner = async () => {
      while (!stop) {
        const other = newSchemaName();
        const tables = Array.from({ length: 30 }, (_, k) => `create table ${other}.t${k} (id serial primary key, a text, b text);`);
        await churn.query(`create schema ${other}; ${tables.join(' ')}`);
        await churn.query(`drop schema ${other} cascade`);
      }
    };
    const churning = [churner(), churner(), churner()];
    try {
      for (let i = 0; i < 10; i += 1) {
        const schema = newSchemaName();
        schemas.push(schema);
        const storage = await openStorage(PG_URL, { schema, poolSize: 2 });
        try {
          expect(await storage.db.selectFrom('instances').select('id').execute()).toEqual([]);
        } finally {
          await storage.close();
        }
      }
    } finally {
      stop = true;
      await Promise.all(churning);
      await churn.end();
    }
  });
});
