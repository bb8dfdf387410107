/**
 * The durable outbox (tables outbox, outbox_pending). An event is written here, with one pending row
 * per durable sink that wants it, before any sink sees it; a sink's acknowledgement deletes its row.
 */
import type { Kysely } from 'kysely';
import type { EventType } from '../network/port.js';
import type { Database } from '../storage/schema.js';
import type { OutboxEntry } from './envelope.js';

/** Rows per INSERT statement: far below SQLite's and PostgreSQL's bound-parameter limits. */
const INSERT_CHUNK = 500;

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

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

  /**
   * Stores a batch of events in one transaction, with one multi-row insert per table; returns them
   * with their sequence numbers, in the order given.
   */
  async append(events: NewOutboxEvent[]): Promise<OutboxEntry[]> {
    if (events.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const seqOf = new Map<string, number>();
      for (const chunk of chunks(events, INSERT_CHUNK)) {
        const rows = await trx
          .insertInto('outbox')
          .values(
            chunk.map((event) => ({
              event_id: event.eventId,
              instance_id: event.instanceId,
              event_type: event.type,
              body: event.body,
              created_at: event.createdAt,
            })),
          )
          .returning(['seq', 'event_id'])
          .execute();
        // Matched by event id: neither database promises RETURNING order for multi-row inserts.
        for (const row of rows) seqOf.set(row.event_id, Number(row.seq));
      }
      const pending = events.flatMap((event) =>
        event.sinks.map((sink) => ({
          seq: seqOf.get(event.eventId)!,
          sink,
          instance_id: event.instanceId,
          attempts: 0,
          next_attempt_at: event.createdAt,
          last_error: null,
          last_status: null,
        })),
      );
      for (const chunk of chunks(pending, INSERT_CHUNK)) await trx.insertInto('outbox_pending').values(chunk).execute();
      return events.map((event) => ({
        seq: seqOf.get(event.eventId)!,
        eventId: event.eventId,
        instanceId: event.instanceId,
        instanceName: event.instanceName,
        type: event.type,
        body: event.body,
        createdAt: event.createdAt,
      }));
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
    await this.ackMany([seq], sink);
  }

  /** Acknowledges several deliveries of one sink in one statement. */
  async ackMany(seqs: number[], sink: string): Promise<void> {
    if (seqs.length === 0) return;
    await this.db.deleteFrom('outbox_pending').where('sink', '=', sink).where('seq', 'in', seqs).execute();
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

  /**
   * Deliveries waiting for sinks that are not configured now (a broker URL removed or mistyped).
   * They are kept — setting the URL again delivers them — and reported, since they also keep their
   * events from pruning.
   */
  async pendingOfUnknownSinks(configured: string[]): Promise<Record<string, number>> {
    return Object.fromEntries(Object.entries(await this.pendingBySink()).filter(([sink]) => !configured.includes(sink)));
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
