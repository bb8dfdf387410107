/** Opens the database named by DATABASE_URL (SQLite file or PostgreSQL) and applies migrations. */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresAdapter, SqliteDialect, sql } from 'kysely';
import type { Database } from './schema.js';
import { BackgroundCheckpointer, type CheckpointerOptions } from './checkpointer.js';
import { migrateToLatest } from './migrations.js';
import { SearchPathPostgresDialect } from './search-path.js';
import { PreparedStatements } from './pg-statements.js';
import { statementCache, type StatementCache } from './sqlite-statements.js';

export type Dialect = 'sqlite' | 'postgres';

/**
 * Frames (4 KB pages) in the write-ahead log at which the background checkpointer starts it over
 * (~64 MB). Each time costs the writes a pause of one checkpoint step (two fsyncs), so a longer log
 * pauses less often: at half of the send road's load on the bench machine (~10 frames per send, as
 * a tick then carries 2–4 sends) that is about one pause a second.
 */
const RECYCLE_AT_FRAMES = 16_000;

export interface Storage {
  db: Kysely<Database>;
  dialect: Dialect;
  /** SQLite with checkpointInBackground: the worker that checkpoints the write-ahead log. */
  checkpointer?: BackgroundCheckpointer;
  close(): Promise<void>;
}

/**
 * node-postgres, loaded by the PostgreSQL paths only: a SQLite gateway (the default) does not carry
 * it (~1.3 MB of heap).
 */
export async function loadPostgresClient(): Promise<typeof import('pg').default> {
  return (await import('pg')).default;
}

// PostgreSQL returns int8 and numeric as strings; our bigints are millisecond times and sequence
// numbers, far below 2^53, so they are read as numbers for this pool only.
function pgTypes(pg: typeof import('pg').default) {
  return {
    getTypeParser: (oid: number, format?: 'text' | 'binary') => {
      if (oid === 20 || oid === 1700) return (value: string) => Number(value);
      return pg.types.getTypeParser(oid, format);
    },
  };
}

/** Whether `db` talks to PostgreSQL (else SQLite): for the few statements spelled per dialect. */
export function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export interface OpenOptions {
  /** PostgreSQL only: the schema to use (created when missing). Lets test runs never collide. */
  schema?: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * SQLite file only: checkpoint the write-ahead log from a worker thread (see checkpointer.ts); an
   * object overrides its defaults (tests).
   */
  checkpointInBackground?: boolean | Pick<CheckpointerOptions, 'intervalMs' | 'recycleAtFrames'>;
  /**
   * PostgreSQL only: told when a pooled connection ends under the gateway (the server restarted, the
   * network cut, an administrator ended the backend). A statement running on it fails as unavailable
   * (503); the pool opens a new connection for the next one.
   */
  onConnectionLost?: (error: Error) => void;
  /** PostgreSQL only: statements run again and again are prepared once per connection (pg-statements.ts); true by default. */
  preparedStatements?: boolean;
}

export async function openStorage(databaseUrl: string, options: OpenOptions = {}): Promise<Storage> {
  let storage: Storage;
  let statements: StatementCache | undefined;
  let prepared: PreparedStatements | undefined;
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const sqlite = new SQLite(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    // Statement journals (every upsert inside the tick's transaction keeps one) and temporary
    // b-trees stay in memory: as files they cost a write syscall per journalled page.
    sqlite.pragma('temp_store = MEMORY');
    const background = options.checkpointInBackground && file !== ':memory:';
    // Without the worker: checkpoint every ~40 MB of WAL instead of ~4 MB, so the pages every commit
    // touches (the right edge of each index) are copied back once per checkpoint, not per 1,000 pages.
    // With it, the writer's own checkpoint is only the safety net, past where the worker starts the
    // log over (RECYCLE_AT_FRAMES).
    sqlite.pragma(`wal_autocheckpoint = ${background ? 2 * RECYCLE_AT_FRAMES : 10_000}`);
    statements = statementCache(sqlite);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: statements }) });
    const checkpointer = background
      ? await BackgroundCheckpointer.start(file, {
          recycleAtFrames: RECYCLE_AT_FRAMES,
          // Kysely's SQLite driver has one connection: holding it queues every statement meanwhile.
          holdWrites: (work) => db.connection().execute(work),
          ...(typeof options.checkpointInBackground === 'object' ? options.checkpointInBackground : {}),
        })
      : undefined;
    storage = {
      db,
      dialect: 'sqlite',
      ...(checkpointer ? { checkpointer } : {}),
      close: async () => {
        await checkpointer?.close();
        await db.destroy();
      },
    };
  } else {
    const schema = options.schema;
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new Error(`invalid schema name ${schema}`);
    }
    const pg = await loadPostgresClient();
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: options.poolSize ?? 10,
      types: pgTypes(pg),
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    // node-postgres emits 'error' on a client whose connection ends, and with no listener that is an
    // uncaught exception: the process would exit. The pool listens only on idle clients (and then
    // emits 'error' itself); a client Kysely holds has no listener at all.
    const lost = (error: Error) => options.onConnectionLost?.(error);
    if (options.preparedStatements !== false) prepared = new PreparedStatements();
    pool.on('connect', (client) => {
      client.on('error', lost);
      prepared?.attach(client);
    });
    // An idle client's end reaches the listener above too; the pool's own event repeats it.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new SearchPathPostgresDialect({ pool }) });
    if (schema) await createSchemaIfMissing(db, schema);
    storage = { db, dialect: 'postgres', close: () => db.destroy() };
  }
  await migrateToLatest(storage.db, storage.dialect, storage.dialect === 'postgres' ? options.schema : undefined);
  // Statements read before a migration changed their tables would keep the old row shape.
  statements?.forget();
  prepared?.start();
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
  const pg = await loadPostgresClient();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await pool.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await pool.end();
  }
}

/** Connection-level failures of node-postgres and the network (codes), and PostgreSQL's own. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  '57P01', // admin_shutdown: the server is stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
  'SQLITE_BUSY', // another writer held the file past busy_timeout
]);
/** node-postgres reports a lost or unobtainable connection by message only. */
const UNREACHABLE_MESSAGE = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect/i;

/**
 * The database could not be reached, as opposed to a statement it refused: what a caller should see
 * as 503 and retry, not as a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  if (error instanceof AggregateError && error.errors.some(isDatabaseUnavailable)) return true;
  return UNREACHABLE_MESSAGE.test(error.message);
}
