/** One migration set, applied at start on SQLite and PostgreSQL alike. */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Dialect } from './db.js';

function migrations(dialect: Dialect): Record<string, Migration> {
  // The only dialect difference: how an auto-incrementing key and a big integer are spelled.
  const serial = dialect === 'postgres' ? 'bigserial' : 'integer';
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    '0001_foundation': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('instances')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull().unique())
          .addColumn('network', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('number', 'text')
          .addColumn('webhook_url', 'text')
          .addColumn('webhook_secret', 'text', (c) => c.notNull())
          .addColumn('webhook_events', 'text', (c) => c.notNull())
          .addColumn('settings', 'text', (c) => c.notNull())
          .addColumn('proxy_url', 'text')
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('instance_tokens')
          .addColumn('hash', 'text', (c) => c.primaryKey())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('valid_until', sql.raw(big))
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.createIndex('instance_tokens_instance').on('instance_tokens').column('instance_id').execute();
      },
    },
    '0002_events': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('outbox')
          .addColumn('seq', sql.raw(serial), (c) =>
            dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
          )
          .addColumn('event_id', 'text', (c) => c.notNull().unique())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('event_type', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.createIndex('outbox_instance').on('outbox').columns(['instance_id', 'seq']).execute();
        await db.schema
          .createTable('outbox_pending')
          .addColumn('seq', sql.raw(big), (c) => c.notNull().references('outbox.seq').onDelete('cascade'))
          .addColumn('sink', 'text', (c) => c.notNull())
          .addColumn('instance_id', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', sql.raw(big), (c) => c.notNull())
          .addColumn('last_error', 'text')
          .addColumn('last_status', 'integer')
          .addPrimaryKeyConstraint('outbox_pending_pk', ['seq', 'sink'])
          .execute();
        await db.schema
          .createIndex('outbox_pending_sink')
          .on('outbox_pending')
          .columns(['sink', 'instance_id', 'seq'])
          .execute();
        await db.schema
          .createTable('dead_letters')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('sink', 'text', (c) => c.notNull())
          .addColumn('event_id', 'text', (c) => c.notNull())
          .addColumn('event_type', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull())
          .addColumn('last_status', 'integer')
          .addColumn('last_error', 'text')
          .addColumn('first_attempt_at', sql.raw(big), (c) => c.notNull())
          .addColumn('last_attempt_at', sql.raw(big), (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('dead_letters_instance')
          .on('dead_letters')
          .columns(['instance_id', 'created_at'])
          .execute();
        await db.schema
          .createTable('sandbox_accounts')
          .addColumn('number', 'text', (c) => c.primaryKey())
          .addColumn('push_name', 'text', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
      },
    },
  };
}

class StaticProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  getMigrations(): Promise<Record<string, Migration>> {
    return Promise.resolve(migrations(this.dialect));
  }
}

export async function migrateToLatest(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const migrator = new Migrator({ db, provider: new StaticProvider(dialect) });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${JSON.stringify(error)}`);
}
