import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/gateway.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { openStorage } from './db.js';

const dirs: string[] = [];
function tempFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-checkpoint-'));
  dirs.push(dir);
  return path.join(dir, 'db.sqlite');
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** Rows of `table` in the database file alone: a copy without its log shows only checkpointed pages. */
function rowsInDatabaseFile(file: string, table: string): number {
  const copy = `${file}.copy`;
  fs.copyFileSync(file, copy);
  const db = new SQLite(copy, { readonly: true });
  try {
    return (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
    fs.rmSync(copy);
  }
}

/** A writer that never checkpoints by itself, so anything copied into the file is the worker's. */
function writer(file: string): SQLite.Database {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('create table t (x blob)');
  db.pragma('wal_checkpoint(TRUNCATE)');
  return db;
}

function insert(db: SQLite.Database, rows: number, bytes = 1_000): void {
  const statement = db.prepare('insert into t values (randomblob(?))');
  db.transaction(() => {
    for (let i = 0; i < rows; i += 1) statement.run(bytes);
  })();
}

describe('BackgroundCheckpointer', () => {
  it('copies the log into the database file from its own thread, and the log starts over', async () => {
    const file = tempFile();
    const db = writer(file);
    insert(db, 2_000);
    expect(rowsInDatabaseFile(file, 't')).toBe(0);

    const checkpointer = await BackgroundCheckpointer.start(file, { intervalMs: 60_000 });
    try {
      const first = await checkpointer.checkpoint();
      expect(first.log).toBeGreaterThan(0);
      expect(first.checkpointed).toBe(first.log);
      expect(rowsInDatabaseFile(file, 't')).toBe(2_000);

      // Once everything is copied the writer's next transaction writes the log from its start, so
      // the file does not double with a second batch of the same size.
      const logBytes = fs.statSync(`${file}-wal`).size;
      insert(db, 2_000);
      const second = await checkpointer.checkpoint();
      expect(second.checkpointed).toBe(second.log);
      expect(fs.statSync(`${file}-wal`).size).toBeLessThan(logBytes * 1.5);
      expect(rowsInDatabaseFile(file, 't')).toBe(4_000);
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  it('checkpoints on its own interval without being asked', async () => {
    const file = tempFile();
    const db = writer(file);
    const checkpointer = await BackgroundCheckpointer.start(file, { intervalMs: 20 });
    try {
      insert(db, 500);
      // The worker writes the file every 20 ms: a copy taken mid-write can be torn, and is taken again.
      const checkpointedRows = () => {
        try {
          return rowsInDatabaseFile(file, 't');
        } catch (error) {
          if (['SQLITE_CORRUPT', 'SQLITE_NOTADB'].includes((error as { code?: string }).code ?? '')) return undefined;
          throw error;
        }
      };
      await waitFor(() => checkpointedRows() === 500 || undefined, 10_000, 'rows checkpointed');
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  it('starts the log over once it holds recycleAtFrames, by copying the rest while the writes are held', async () => {
    const file = tempFile();
    const db = writer(file);
    // A reader's open snapshot keeps every step from copying past it, as a writer that commits
    // during each step does under load: without a pause of the writes the log only grows.
    const reader = new SQLite(file);
    reader.prepare('begin').run();
    reader.prepare('select count(*) from t').get();
    insert(db, 2_000);
    let holds = 0;
    const checkpointer = await BackgroundCheckpointer.start(file, {
      intervalMs: 20,
      recycleAtFrames: 100,
      holdWrites: async (work) => {
        holds += 1;
        if (reader.inTransaction) reader.prepare('commit').run();
        await work();
      },
    });
    try {
      await waitFor(() => checkpointer.recycled >= 1 || undefined, 10_000, 'a recycle');
      expect(holds).toBeGreaterThanOrEqual(1);
      // The writer's next transaction writes the log from its start: a few frames, not 2,000 rows' worth.
      insert(db, 10);
      const step = await checkpointer.checkpoint();
      expect(step.log).toBeLessThan(50);
      expect(rowsInDatabaseFile(file, 't')).toBe(2_010);
    } finally {
      await checkpointer.close();
      reader.close();
      db.close();
    }
  });

  it('does not ask for a pause below recycleAtFrames', async () => {
    const file = tempFile();
    const db = writer(file);
    let holds = 0;
    const checkpointer = await BackgroundCheckpointer.start(file, {
      intervalMs: 10,
      recycleAtFrames: 100_000,
      holdWrites: async (work) => {
        holds += 1;
        await work();
      },
    });
    try {
      insert(db, 500);
      await waitFor(() => rowsInDatabaseFile(file, 't') === 500 || undefined, 10_000, 'rows checkpointed');
      expect(holds).toBe(0);
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  it('keeps the log of a storage under steady writes bounded, holding its connection for each recycle', { timeout: 60_000 }, async () => {
    const file = tempFile();
    const storage = await openStorage(`sqlite:${file}`, { checkpointInBackground: { intervalMs: 10, recycleAtFrames: 64 } });
    try {
      // Writes in small transactions (~10 frames each), each on its own turn of the event loop (as
      // the outbox's ticks): the worker never finds the writer between two of them by itself. They go
      // on until the worker has had its pause three times and 150 transactions (~1,500 frames) were
      // written, however slow a loaded machine makes the worker.
      let written = 0;
      const write = async () => {
        await new Promise((resolve) => setImmediate(resolve));
        await storage.db.transaction().execute(async (trx) => {
          for (let k = 0; k < 10; k += 1) {
            await sql`insert into sandbox_world (kind, id, body, updated_at) values ('load', ${`${written}-${k}`}, ${'x'.repeat(4_000)}, 0)`.execute(
              trx,
            );
          }
        });
        written += 1;
      };
      const deadline = Date.now() + 40_000;
      const recycled = () => storage.checkpointer?.recycled ?? 0;
      const writeUntil = async (done: () => boolean, what: string) => {
        while (!done()) {
          if (Date.now() > deadline) throw new Error(`${what} after ${written} transactions`);
          await write();
        }
      };
      await writeUntil(() => recycled() >= 3 && written >= 150, 'no third recycle');
      // The log starts over at the first write after a recycle: it holds what came since, not the
      // frames of every transaction written. The last recycle may be long past (a slow fsync delays
      // the next one), so the count starts at a recycle seen now: ~20 transactions then.
      const seen = recycled();
      await writeUntil(() => recycled() > seen, 'no recycle');
      for (let i = 0; i < 20; i += 1) await write();
      const step = await storage.checkpointer!.checkpoint();
      expect(step.log).toBeLessThan(1_000);
    } finally {
      await storage.close();
    }
  });

  it('is what a SQLite storage opened with checkpointInBackground uses, and stops with it', async () => {
    const file = tempFile();
    const storage = await openStorage(`sqlite:${file}`, { checkpointInBackground: true });
    try {
      // Far below the writer's own threshold (10,000 pages): only the worker copies these.
      await sql`insert into sandbox_world (kind, id, body, updated_at) values ('probe', 'checkpoint', '{}', 0)`.execute(storage.db);
      await waitFor(
        () => {
          try {
            return rowsInDatabaseFile(file, "sandbox_world where kind = 'probe'") === 1 || undefined;
          } catch {
            return undefined; // the migrations themselves are not in the file yet
          }
        },
        10_000,
        'the row in the database file',
      );
    } finally {
      await storage.close();
    }
    // A second close (the gateway's, after a caller closed the storage itself) ends at once.
    await storage.close();
  });
});
