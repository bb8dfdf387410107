/**
 * The durable outbox (tables outbox, outbox_pending). An event is written here, with one pending row
 * per durable sink that wants it, before any sink sees it; a sink's acknowledgement deletes its row.
 */
import type { Kysely } from 'kysely';
import type { EventType } from '../network/port.js';
import type { Database } from '../storage/schema.js';
import type { OutboxEntry } from './envelope.js';

export interface NewOutboxEvent {
  eventId: string;
  instanceId: string;
  instanceName: string;
  type: EventType;
  body: string;
  createdAt: number;
  /** Durable sinks that must deliver this event. */
  sinks: string[];
}

export interface PendingDelivery {
  entry: OutboxEntry;
  attempts: number;
  nextAttemptAt: number;
  firstAttemptAt: number;
}

export class OutboxStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Stores a batch of events in one transaction; returns them with their sequence numbers. */
  async append(events: NewOutboxEvent[]): Promise<OutboxEntry[]> {
    if (events.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const stored: OutboxEntry[] = [];
      for (const event of events) {
        const row = await trx
          .insertInto('outbox')
          .values({
            event_id: event.eventId,
            instance_id: event.instanceId,
            event_type: event.type,
            body: event.body,
            created_at: event.createdAt,
          })
          .returning('seq')
          .executeTakeFirstOrThrow();
        const seq = Number(row.seq);
        if (event.sinks.length > 0) {
          await trx
            .insertInto('outbox_pending')
            .values(
              event.sinks.map((sink) => ({
                seq,
                sink,
                instance_id: event.instanceId,
                attempts: 0,
                next_attempt_at: event.createdAt,
                last_error: null,
                last_status: null,
              })),
            )
            .execute();
        }
        stored.push({
          seq,
          eventId: event.eventId,
          instanceId: event.instanceId,
          instanceName: event.instanceName,
          type: event.type,
          body: event.body,
          createdAt: event.createdAt,
        });
      }
      return stored;
    });
  }

  /** The next pending deliveries of one sink for one instance, oldest first. */
  async pending(sink: string, instanceId: string, limit: number): Promise<PendingDelivery[]> {
    const rows = await this.db
      .selectFrom('outbox_pending as p')
      .innerJoin('outbox as o', 'o.seq', 'p.seq')
      .innerJoin('instances as i', 'i.id', 'o.instance_id')
      .select([
        'o.seq',
        'o.event_id',
        'o.instance_id',
        'i.name',
        'o.event_type',
        'o.body',
        'o.created_at',
        'p.attempts',
        'p.next_attempt_at',
      ])
      .where('p.sink', '=', sink)
      .where('p.instance_id', '=', instanceId)
      .orderBy('p.seq')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      entry: {
        seq: Number(row.seq),
        eventId: row.event_id,
        instanceId: row.instance_id,
        instanceName: row.name,
        type: row.event_type as EventType,
        body: row.body,
        createdAt: row.created_at,
      },
      attempts: row.attempts,
      nextAttemptAt: row.next_attempt_at,
      firstAttemptAt: row.created_at,
    }));
  }

  /** Every (sink, instance) pair with deliveries waiting: the lanes to resume after a restart. */
  async lanes(): Promise<{ sink: string; instanceId: string }[]> {
    const rows = await this.db.selectFrom('outbox_pending').select(['sink', 'instance_id']).distinct().execute();
    return rows.map((row) => ({ sink: row.sink, instanceId: row.instance_id }));
  }

  async ack(seq: number, sink: string): Promise<void> {
    await this.db.deleteFrom('outbox_pending').where('seq', '=', seq).where('sink', '=', sink).execute();
  }

  async recordFailure(seq: number, sink: string, attempts: number, nextAttemptAt: number, error: string, status: number | null) {
    await this.db
      .updateTable('outbox_pending')
      .set({ attempts, next_attempt_at: nextAttemptAt, last_error: error, last_status: status })
      .where('seq', '=', seq)
      .where('sink', '=', sink)
      .execute();
  }

  async pendingBySink(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('outbox_pending')
      .select(['sink', (eb) => eb.fn.countAll().as('n')])
      .groupBy('sink')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.sink, Number(row.n)]));
  }

  /** Deletes delivered events older than the cutoff (those with no pending deliveries left). */
  async prune(olderThan: number): Promise<number> {
    const result = await this.db
      .deleteFrom('outbox')
      .where('created_at', '<', olderThan)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('outbox_pending as p').select('p.seq').whereRef('p.seq', '=', 'outbox.seq'))))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
