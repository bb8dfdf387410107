import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CompiledInsert, CompiledStatement } from './compiled-statements.js';
import { dropSchema, openStorage, type Storage } from './db.js';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

interface Probe {
  id: number;
  name: string;
  score?: number;
}

describe.each(['sqlite', 'postgres'] as const)('CompiledInsert on %s', (dialect) => {
  let storage: Storage;
  let db: Kysely<any>;
  const schema = dialect === 'postgres' ? `wg_compiled_${process.pid}_${randomBytes(4).toString('hex')}` : undefined;

  beforeAll(async () => {
    const url = dialect === 'postgres' ? PG_URL : `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'compiled-')), 'probe.db')}`;
    storage = await openStorage(url, schema ? { schema, poolSize: 2 } : {});
    db = storage.db;
    await sql`create table probe (id integer primary key, name text not null, score integer not null default 7)`.execute(db);
  });
  afterAll(async () => {
    await storage?.close();
    if (schema) await dropSchema(PG_URL, schema);
  });
  beforeEach(async () => {
    await db.deleteFrom('probe').execute();
  });

  const stored = () => db.selectFrom('probe').selectAll().orderBy('id').execute();

  it('builds a shape once and runs its SQL again with the next rows, returning what they return', async () => {
    let builds = 0;
    const insert = new CompiledInsert((d: Kysely<any>, rows: Probe[]) => {
      builds += 1;
      return d.insertInto('probe').values(rows).returning(['id', 'name']);
    });
    const first = await insert.execute(db, [
      { id: 1, name: 'a', score: 1 },
      { id: 2, name: 'b', score: 2 },
    ]);
    const second = await insert.execute(db, [
      { id: 3, name: 'c', score: 3 },
      { id: 4, name: 'd', score: 4 },
    ]);
    expect(builds).toBe(1);
    expect(first).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ]);
    expect(second).toEqual([
      { id: 3, name: 'c' },
      { id: 4, name: 'd' },
    ]);
    // Another row count is another shape; then the first shape again, from memory.
    await insert.execute(db, [{ id: 5, name: 'e', score: 5 }]);
    expect(builds).toBe(2);
    await insert.execute(db, [
      { id: 6, name: 'f', score: 6 },
      { id: 7, name: 'g', score: 7 },
    ]);
    expect(builds).toBe(2);
    expect((await stored()).map((row) => [row.id, row.name, row.score])).toEqual([
      [1, 'a', 1],
      [2, 'b', 2],
      [3, 'c', 3],
      [4, 'd', 4],
      [5, 'e', 5],
      [6, 'f', 6],
      [7, 'g', 7],
    ]);
  });

  it('runs inside the caller’s transaction', async () => {
    const insert = new CompiledInsert((d: Kysely<any>, rows: Probe[]) => d.insertInto('probe').values(rows));
    await insert.execute(db, [{ id: 1, name: 'a', score: 1 }]);
    await expect(
      db.transaction().execute(async (trx) => {
        await insert.execute(trx, [{ id: 2, name: 'b', score: 2 }]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await stored()).map((row) => row.id)).toEqual([1]);
  });

  it('builds every time when a row leaves a column undefined (Kysely leaves it out of the statement)', async () => {
    let builds = 0;
    const insert = new CompiledInsert((d: Kysely<any>, rows: Probe[]) => {
      builds += 1;
      return d.insertInto('probe').values(rows);
    });
    await insert.execute(db, [{ id: 1, name: 'a', score: undefined }]);
    await insert.execute(db, [{ id: 2, name: 'b', score: undefined }]);
    await insert.execute(db, [{ id: 3, name: 'c' }]);
    expect(builds).toBe(3);
    expect((await stored()).map((row) => row.score)).toEqual([7, 7, 7]);
  });

  it('builds every time a statement whose parameters are not only the row values', async () => {
    let builds = 0;
    const upsert = new CompiledInsert((d: Kysely<any>, rows: Probe[]) => {
      builds += 1;
      return d
        .insertInto('probe')
        .values(rows)
        .onConflict((oc) => oc.column('id').doUpdateSet({ name: 'replaced' }));
    });
    await upsert.execute(db, [{ id: 1, name: 'a', score: 1 }]);
    await upsert.execute(db, [{ id: 1, name: 'b', score: 1 }]);
    await upsert.execute(db, [{ id: 2, name: 'c', score: 2 }]);
    expect(builds).toBe(3);
    expect((await stored()).map((row) => [row.id, row.name])).toEqual([
      [1, 'replaced'],
      [2, 'c'],
    ]);
  });

  it('CompiledStatement: builds once and runs its SQL again with the next arguments; built every time when its parameters are not the arguments', async () => {
    await db
      .insertInto('probe')
      .values([1, 2, 3, 4, 5].map((id) => ({ id, name: id % 2 ? 'odd' : 'even', score: id })))
      .execute();
    let builds = 0;
    const read = new CompiledStatement((d: Kysely<any>, name: string, above: number, limit: number) => {
      builds += 1;
      return d.selectFrom('probe').select(['id', 'score']).where('name', '=', name).where('id', '>', above).orderBy('id').limit(limit);
    });
    expect(await read.execute(db, 'odd', 0, 2)).toEqual([
      { id: 1, score: 1 },
      { id: 3, score: 3 },
    ]);
    expect(await read.execute(db, 'even', 2, 10)).toEqual([{ id: 4, score: 4 }]);
    expect(await read.execute(db, 'odd', 1, 1)).toEqual([{ id: 3, score: 3 }]);
    expect(builds).toBe(1);

    // A literal of its own among the parameters: the text cannot be run with the arguments alone.
    let literalBuilds = 0;
    const withLiteral = new CompiledStatement((d: Kysely<any>, above: number) => {
      literalBuilds += 1;
      return d.selectFrom('probe').select('id').where('name', '=', 'odd').where('id', '>', above).orderBy('id');
    });
    expect(await withLiteral.execute(db, 1)).toEqual([{ id: 3 }, { id: 5 }]);
    expect(await withLiteral.execute(db, 3)).toEqual([{ id: 5 }]);
    expect(literalBuilds).toBe(2);
  });
});
