/**
 * The statements Kysely runs on SQLite: prepared once per SQL text, and their rows built in
 * JavaScript.
 *
 * Kysely prepares every query it runs; compiling the same SQL again on every send costs more than
 * running it. Statements are reusable in better-sqlite3 (each call runs to completion), so the
 * latest few hundred texts stay prepared. SQLite re-prepares a cached statement by itself after a
 * schema change; `forget` drops them all (after migrations, whose column lists a cached row shape
 * would not know).
 *
 * Rows: better-sqlite3 builds each row object in C++ (`v8::Object::New` with names and values). In a
 * process that has loaded Baileys, every such object cost ~7 times the memory of the same object
 * made in JavaScript (a 50-row page: 257 KB instead of 34 KB) and lived long enough to be promoted:
 * the chat list spent 16 % of its time in the garbage collector. Reader statements are switched to
 * raw mode (arrays of values) and each row is made by a function compiled once per column list, an
 * object literal of fixed shape.
 */
import type SQLite from 'better-sqlite3';
import { RecentlyUsedMap } from '../bounded-maps.js';

/** Prepared statements kept per SQL text (most used first out last). */
const STATEMENT_CACHE = 256;

type Row = Record<string, unknown>;
type RowOf = (values: unknown[]) => Row;

/** What Kysely's SQLite driver calls on a statement. */
export interface CachedStatement {
  readonly reader: boolean;
  all(parameters: readonly unknown[]): unknown[];
  run(parameters: readonly unknown[]): SQLite.RunResult;
  iterate(parameters: readonly unknown[]): IterableIterator<unknown>;
}

export interface StatementCache {
  prepare(text: string): CachedStatement;
  /** Drops every prepared statement (their row shapes with them). */
  forget(): void;
  close(): void;
}

const rowMakers = new Map<string, RowOf>();

/** The function that makes a row object of `columns` from its values. */
export function rowMaker(columns: readonly string[]): RowOf {
  const key = columns.join('\0');
  let make = rowMakers.get(key);
  if (!make) {
    if (columns.includes('__proto__')) {
      // An object literal would set the prototype for this one name; assign instead.
      make = (values) => {
        const row: Row = {};
        columns.forEach((name, i) =>
          Object.defineProperty(row, name, { value: values[i], enumerable: true, writable: true, configurable: true }),
        );
        return row;
      };
    } else {
      const fields = columns.map((name, i) => `${JSON.stringify(name)}: values[${i}]`).join(', ');
      // Names are quoted by JSON.stringify; the body is only an object literal of them.
      // eslint-disable-next-line @typescript-eslint/no-implied-eval
      make = new Function('values', `return { ${fields} };`) as RowOf;
    }
    rowMakers.set(key, make);
  }
  return make;
}

function cachedStatement(statement: SQLite.Statement): CachedStatement {
  // A write without `returning` has no rows to build: the statement serves as it is.
  if (!statement.reader) return statement;
  statement.raw(true);
  let make: RowOf | undefined;
  let width = -1;
  // The column list is read again only when the row width changes (a re-prepared `select *`).
  const maker = (values: unknown[]): RowOf => {
    if (values.length !== width || !make) {
      make = rowMaker(statement.columns().map((column) => column.name));
      width = values.length;
    }
    return make;
  };
  return {
    reader: true,
    all: (parameters) => {
      const rows = statement.all(parameters) as unknown[][];
      if (rows.length === 0) return rows;
      const make = maker(rows[0]!);
      for (let i = 0; i < rows.length; i += 1) (rows as unknown[])[i] = make(rows[i]!);
      return rows;
    },
    run: (parameters) => statement.run(parameters),
    *iterate(parameters) {
      for (const values of statement.iterate(parameters) as IterableIterator<unknown[]>) yield maker(values)(values);
    },
  };
}

export function statementCache(sqlite: SQLite.Database): StatementCache {
  const cache = new RecentlyUsedMap<string, CachedStatement>(STATEMENT_CACHE);
  return {
    prepare(text) {
      let statement = cache.get(text);
      if (!statement) {
        statement = cachedStatement(sqlite.prepare(text));
        cache.set(text, statement);
      }
      return statement;
    },
    forget: () => cache.clear(),
    close: () => sqlite.close(),
  };
}
