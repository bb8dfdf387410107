import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rowMaker, statementCache, type StatementCache } from './sqlite-statements.js';

describe('statementCache', () => {
  let sqlite: SQLite.Database;
  let statements: StatementCache;

  beforeEach(() => {
    sqlite = new SQLite(':memory:');
    sqlite.exec(`create table t (id integer primary key, name text, score real, data blob);
                 insert into t (name, score, data) values ('a', 1.5, x'0102'), (null, null, null)`);
    statements = statementCache(sqlite);
  });
  afterEach(() => statements.close());

  it('gives rows as plain objects with every column, as better-sqlite3 does', () => {
    const text = 'select id, name, score, data from t order by id';
    const expected = sqlite.prepare(text).all();
    const rows = statements.prepare(text).all([]);
    expect(rows).toEqual(expected);
    expect(rows[0]).toEqual({ id: 1, name: 'a', score: 1.5, data: Buffer.from([1, 2]) });
    expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
    // The same statement again, from the cache.
    expect(statements.prepare(text)).toBe(statements.prepare(text));
    expect(statements.prepare(text).all([])).toEqual(expected);
  });

  it('binds parameters and answers an empty result with an empty array', () => {
    const statement = statements.prepare('select name from t where id = ?');
    expect(statement.all([1])).toEqual([{ name: 'a' }]);
    expect(statement.all([99])).toEqual([]);
  });

  it('runs writes, and returns the rows of a write that returns some', () => {
    const insert = statements.prepare('insert into t (name) values (?)');
    expect(insert.reader).toBe(false);
    expect(insert.run(['b']).changes).toBe(1);
    const returning = statements.prepare('insert into t (name) values (?) returning id, name');
    expect(returning.reader).toBe(true);
    expect(returning.all(['c'])).toEqual([{ id: 4, name: 'c' }]);
  });

  it('iterates rows as objects', () => {
    expect([...statements.prepare('select id from t order by id').iterate([])]).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('keeps a column named __proto__ as a column, not as the prototype', () => {
    const [row] = statements.prepare(`select 'x' as "__proto__", 1 as n`).all([]) as Record<string, unknown>[];
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.keys(row!)).toEqual(['__proto__', 'n']);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toBe('x');
  });

  it('follows a table that gained a column, and forgets every statement when told', () => {
    const all = statements.prepare('select * from t where id = 1');
    expect(all.all([])).toEqual([{ id: 1, name: 'a', score: 1.5, data: Buffer.from([1, 2]) }]);
    sqlite.exec("alter table t add column extra text default 'e'");
    // SQLite re-prepares the statement; the row shape follows its new width.
    expect(statements.prepare('select * from t where id = 1').all([])).toEqual([
      { id: 1, name: 'a', score: 1.5, data: Buffer.from([1, 2]), extra: 'e' },
    ]);
    sqlite.exec('alter table t rename column extra to renamed');
    statements.forget();
    expect(statements.prepare('select * from t where id = 1').all([])).toEqual([
      { id: 1, name: 'a', score: 1.5, data: Buffer.from([1, 2]), renamed: 'e' },
    ]);
  });
});

describe('rowMaker', () => {
  it('is made once per column list', () => {
    expect(rowMaker(['a', 'b'])).toBe(rowMaker(['a', 'b']));
    expect(rowMaker(['a', 'b'])(['x', 2])).toEqual({ a: 'x', b: 2 });
  });

  it('quotes names that are not identifiers', () => {
    const name = `weird "name"\\ }; process.exit(1); ({`;
    expect(rowMaker([name, 'count(*)'])([1, 2])).toEqual({ [name]: 1, 'count(*)': 2 });
  });
});
