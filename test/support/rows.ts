/** Rows written straight into a database by storage-level tests (no gateway in between). */
import type { Kysely } from 'kysely';
import type { Database } from '../../src/storage/schema.js';

/** A bare instance row (never connected, no webhook): what tables referencing instances need. */
export async function insertInstanceRow(db: Kysely<Database>, id: string, name: string, network = 'whatsapp'): Promise<void> {
  await db
    .insertInto('instances')
    .values({
      id,
      name,
      network,
      status: 'created',
      number: null,
      webhook_url: null,
      webhook_secret: 'secret',
      webhook_events: '"ALL"',
      settings: '{}',
      proxy_url: null,
      created_at: 0,
      updated_at: 0,
    })
    .execute();
}
