/** Named statements on a real PostgreSQL: which are prepared, where, and that a migration elsewhere breaks none. */
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { newSchemaName, PG_URL } from '../../test/support/gateway.js';
import { dropSchema, openStorage, type Storage } from './db.js';
import { PreparedStatements } from './pg-statements.js';

const schemas: string[] = [];
let storage: Storage | undefined;

/** A gateway storage of one connection (so the prepared statements seen are its own), with a scratch table. */
async function oneConnection(preparedStatements?: boolean): Promise<Kysely<any>> {
  const schema = newSchemaName();
  schemas.push(schema);
  storage = await openStorage(PG_URL, { schema, poolSize: 1, ...(preparedStatements === undefined ? {} : { preparedStatements }) });
  const db = storage.db as unknown as Kysely<any>;
  await sql`create table scratch (id integer primary key, name text)`.execute(db);
  await sql`insert into scratch values (1, 'one'), (2, 'two')`.execute(db);
  return db;
}

async function preparedTexts(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
  return rows.map((row) => row.statement);
}

afterEach(async () => {
  await storage?.close();
  storage = undefined;
});
afterAll(async () => {
  for (const schema of schemas) await dropSchema(PG_URL, schema);
});

describe('PreparedStatements', () => {
  it('prepares a statement from its second run on, and it answers as before', async () => {
    const db = await oneConnection();
    const byId = (id: number) => db.selectFrom('scratch').select(['id', 'name']).where('id', '=', id);
    const text = byId(1).compile().sql;
    expect(await byId(1).execute()).toEqual([{ id: 1, name: 'one' }]);
    expect(await preparedTexts(db)).not.toContain(text);
    expect(await byId(2).execute()).toEqual([{ id: 2, name: 'two' }]);
    expect(await preparedTexts(db)).toContain(text);
    expect(await byId(1).execute()).toEqual([{ id: 1, name: 'one' }]);
    expect((await preparedTexts(db)).filter((t) => t === text)).toHaveLength(1);
  });

  it('leaves unnamed a select of *, a LIKE, and everything when turned off', async () => {
    const db = await oneConnection();
    const star = () => db.selectFrom('scratch').selectAll().where('id', '=', 1);
    const like = () => db.selectFrom('scratch').select('id').where('name', 'like', 'o%');
    const counted = () =>
      db
        .selectFrom('scratch')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('id', '>', 0);
    for (let i = 0; i < 3; i += 1) await Promise.all([star().execute(), like().execute(), counted().execute()]);
    const texts = await preparedTexts(db);
    expect(texts).not.toContain(star().compile().sql);
    expect(texts).not.toContain(like().compile().sql);
    expect(texts).toContain(counted().compile().sql);
    await storage!.close();

    const off = await oneConnection(false);
    for (let i = 0; i < 3; i += 1) await off.selectFrom('scratch').select('name').where('id', '=', 1).execute();
    expect(await preparedTexts(off)).toEqual([]);
  });

  it('keeps answering after another connection adds a column to the table', async () => {
    const db = await oneConnection();
    const columns = () => db.selectFrom('scratch').select(['id', 'name']).where('id', '=', 1);
    const star = () => db.selectFrom('scratch').selectAll().where('id', '=', 1);
    for (let i = 0; i < 3; i += 1) await Promise.all([columns().execute(), star().execute()]);
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    const other = new pg.Pool({ connectionString: PG_URL, max: 1 });
    try {
      await other.query(`alter table "${rows[0]!.schema}".scratch add column extra text default 'x'`);
    } finally {
      await other.end();
    }
    // A prepared `select *` would now fail with "cached plan must not change result type".
    expect(await columns().execute()).toEqual([{ id: 1, name: 'one' }]);
    expect(await star().execute()).toEqual([{ id: 1, name: 'one', extra: 'x' }]);
  });

  it('names at most its bound of statements on one connection', async () => {
    const statements = new PreparedStatements(2);
    statements.start();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      statements.attach(client);
      for (const n of [1, 2, 3]) {
        for (let run = 0; run < 3; run += 1) {
          const { rows } = await client.query(`select $1::int + ${n} as v`, [run]);
          expect(rows).toEqual([{ v: run + n }]);
        }
      }
      const { rows } = await client.query('select count(*)::int as n from pg_prepared_statements', []);
      expect(rows).toEqual([{ n: 2 }]);
    } finally {
      await client.end();
    }
  });
});
