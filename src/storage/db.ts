/** Opens the database named by DATABASE_URL (SQLite file or PostgreSQL) and applies migrations. */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresAdapter, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { migrateToLatest } from './migrations.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Storage {
  db: Kysely<Database>;
  dialect: Dialect;
  close(): Promise<void>;
}

// PostgreSQL returns int8 and numeric as strings; our bigints are millisecond times and sequence
// numbers, far below 2^53, so they are read as numbers for this pool only.
const pgTypes = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => {
    if (oid === 20 || oid === 1700) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/** Whether `db` talks to PostgreSQL (else SQLite): for the few statements spelled per dialect. */
export function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** Prepared statements kept per SQL text (most used first out last). */
const STATEMENT_CACHE = 256;

/**
 * Kysely prepares every query it runs; compiling the same SQL again on every send costs more than
 * running it. Statements are reusable in better-sqlite3 (each call runs to completion), so the
 * latest few hundred texts stay prepared. SQLite re-prepares a cached statement by itself after a
 * schema change.
 */
function withStatementCache(sqlite: SQLite.Database): Pick<SQLite.Database, 'prepare' | 'close'> {
  const cache = new Map<string, SQLite.Statement>();
  return {
    prepare: ((text: string) => {
      let statement = cache.get(text);
      if (statement) {
        cache.delete(text);
      } else {
        statement = sqlite.prepare(text);
        if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value!);
      }
      cache.set(text, statement);
      return statement;
    }) as SQLite.Database['prepare'],
    close: () => sqlite.close(),
  };
}

export interface OpenOptions {
  /** PostgreSQL only: the schema to use (created when missing). Lets test runs never collide. */
  schema?: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
}

export async function openStorage(databaseUrl: string, options: OpenOptions = {}): Promise<Storage> {
  let storage: Storage;
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const sqlite = new SQLite(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    // Checkpoint every ~40 MB of WAL instead of ~4 MB: the pages every commit touches (the right
    // edge of each index) are copied back to the database once per checkpoint, not once per 1,000 pages.
    sqlite.pragma('wal_autocheckpoint = 10000');
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    storage = { db, dialect: 'sqlite', close: () => db.destroy() };
  } else {
    const schema = options.schema;
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new Error(`invalid schema name ${schema}`);
    }
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: options.poolSize ?? 10,
      types: pgTypes,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    if (schema) await createSchemaIfMissing(db, schema);
    storage = { db, dialect: 'postgres', close: () => db.destroy() };
  }
  await migrateToLatest(storage.db, storage.dialect, storage.dialect === 'postgres' ? options.schema : undefined);
  return storage;
}

/** Two processes starting together may both try; PostgreSQL can then fail one `if not exists`. */
async function createSchemaIfMissing(db: Kysely<Database>, schema: string): Promise<void> {
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  } catch (error) {
    const found = await sql<{ n: number }>`select 1 as n from pg_namespace where nspname = ${schema}`.execute(db);
    if (found.rows.length === 0) throw error;
  }
}

/** Drops a PostgreSQL schema made for a test run. */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await pool.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await pool.end();
  }
}
