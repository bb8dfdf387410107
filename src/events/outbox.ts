/**
 * The durable outbox (tables outbox, outbox_pending). An event is written here, with one pending row
 * per durable sink that wants it, before any sink sees it; a sink's acknowledgement deletes its row.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder } from 'kysely';
import type { EventType } from '../network/port.js';
import { CompiledInsert, CompiledStatement } from '../storage/compiled-statements.js';
import { isPostgres } from '../storage/db.js';
import { passFence, type WriteFence } from '../storage/fence.js';
import type { Database } from '../storage/schema.js';
import type { OutboxEntry } from './envelope.js';

/** Rows per INSERT statement: far below SQLite's and PostgreSQL's bound-parameter limits. */
const INSERT_CHUNK = 500;
/**
 * Events per prune step. On SQLite a step runs on the event loop (~15 ms for 1,000 events moved to
 * the archive), and the pruner gives the loop back between steps, so requests wait at most one step.
 */
const PRUNE_CHUNK = 1000;
/** Sequence numbers per acknowledging DELETE. */
const ACK_CHUNK = 5000;
/** Lanes whose pages one PostgreSQL statement reads (`pendingOfLanes`). */
const LANES_PER_READ = 200;

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The envelope's bytes with `"seq":n` as its last member (the envelope is serialised once, by the bus). */
function withSeq(body: string, seq: number): string {
  return body === '{}' ? `{"seq":${seq}}` : `${body.slice(0, -1)},"seq":${seq}}`;
}

export interface NewOutboxEvent {
  eventId: string;
  instanceId: string;
  instanceName: string;
  type: EventType;
  /** The JSON envelope without `seq` (append adds it). */
  body: string;
  createdAt: number;
  /** Durable sinks that must deliver this event. */
  sinks: string[];
}

/** What `append` gives back for `event`: its outbox `seq` and the body as stored (with `"seq":n`). */
function storedEntry(event: NewOutboxEvent, seq: number, body: string): OutboxEntry {
  return {
    seq,
    eventId: event.eventId,
    instanceId: event.instanceId,
    instanceName: event.instanceName,
    type: event.type,
    body,
    createdAt: event.createdAt,
  };
}

/** One lane's page to read (`pendingOfLanes`). */
export interface LanePage {
  sink: string;
  instanceId: string;
  limit: number;
}

interface PendingReadRow {
  seq: number | string;
  event_id: string;
  instance_id: string;
  name: string;
  event_type: string;
  body: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
}

function pendingDelivery(row: PendingReadRow): PendingDelivery {
  return {
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
  };
}

export interface PendingDelivery {
  entry: OutboxEntry;
  attempts: number;
  nextAttemptAt: number;
  firstAttemptAt: number;
}

type OutboxRow = { event_id: string; instance_id: string; event_type: EventType; body: string; created_at: number };
type PendingRow = {
  seq: number;
  sink: string;
  instance_id: string;
  attempts: number;
  next_attempt_at: number;
  last_error: null;
  last_status: null;
};

export class OutboxStore {
  private fence: WriteFence | undefined;
  // The tick's statements, built once per shape (storage/compiled-insert.ts).
  private readonly advanceSequences = new CompiledInsert((db: Kysely<Database>, rows: { instance_id: string; seq: number }[]) =>
    db
      .insertInto('event_sequences')
      .values(rows)
      .onConflict((oc) => oc.column('instance_id').doUpdateSet((eb) => ({ seq: eb('event_sequences.seq', '+', eb.ref('excluded.seq')) })))
      .returning(['instance_id', 'seq']),
  );
  private readonly insertEvents = new CompiledInsert((db: Kysely<Database>, rows: OutboxRow[]) =>
    db.insertInto('outbox').values(rows).returning(['seq', 'event_id']),
  );
  /** SQLite: the same without RETURNING (a third of the statement's time); see `append`. */
  private readonly insertEventsNumbered = new CompiledInsert((db: Kysely<Database>, rows: OutboxRow[]) =>
    db.insertInto('outbox').values(rows),
  );
  private readonly insertPending = new CompiledInsert((db: Kysely<Database>, rows: PendingRow[]) =>
    db.insertInto('outbox_pending').values(rows),
  );

  constructor(private readonly db: Kysely<Database>) {}

  /** Cluster mode: an instance's events are stored only by its owner (storage/fence.ts). */
  fenceWith(fence: WriteFence): void {
    this.fence = fence;
  }

  /**
   * Stores a batch of events in one transaction, with one multi-row insert per table; returns them
   * with their sequence numbers, in the order given. Each event's JSON body gets its instance's next
   * `seq` (event_sequences, advanced in the same transaction, so numbers are never reused or skipped
   * by what is stored). `alsoIn` writes more rows in the same transaction.
   */
  async append(events: NewOutboxEvent[], alsoIn?: (trx: Kysely<Database>) => Promise<void>): Promise<OutboxEntry[]> {
    if (events.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const counts = new Map<string, number>();
      for (const event of events) counts.set(event.instanceId, (counts.get(event.instanceId) ?? 0) + 1);
      // First, so a stale owner's tick writes nothing (StaleOwnerError names its instances).
      await passFence(this.fence, trx, [...counts.keys()]);
      // Writes that commit with these events (the message rows of the same tick: one commit).
      await alsoIn?.(trx);
      const next = new Map<string, number>();
      // One upsert for every instance of the tick, rows in a fixed order: PostgreSQL takes the row
      // locks in that order, so two transactions never wait on each other in a cycle.
      const advances = [...counts]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([instanceId, count]) => ({ instance_id: instanceId, seq: count }));
      for (const chunk of chunks(advances, INSERT_CHUNK)) {
        // Matched by instance id: neither database promises RETURNING order for multi-row inserts.
        for (const row of await this.advanceSequences.execute(trx, chunk))
          next.set(row.instance_id, Number(row.seq) - counts.get(row.instance_id)! + 1);
      }
      events = events.map((event) => {
        const seq = next.get(event.instanceId)!;
        next.set(event.instanceId, seq + 1);
        return { ...event, body: withSeq(event.body, seq) };
      });
      const seqOf = new Map<string, number>();
      const sqlite = !isPostgres(this.db);
      for (const chunk of chunks(events, INSERT_CHUNK)) {
        const rows = chunk.map((event) => ({
          event_id: event.eventId,
          instance_id: event.instanceId,
          event_type: event.type,
          body: event.body,
          created_at: event.createdAt,
        }));
        if (sqlite) {
          // One writer at a time, and `seq` is AUTOINCREMENT: the rows of one INSERT are numbered one
          // after another in the order of its VALUES, the last one `insertId`.
          const { insertId } = await this.insertEventsNumbered.run(trx, rows);
          const first = Number(insertId) - chunk.length + 1;
          chunk.forEach((event, i) => seqOf.set(event.eventId, first + i));
          continue;
        }
        // Matched by event id: PostgreSQL does not promise RETURNING order for multi-row inserts.
        for (const row of await this.insertEvents.execute(trx, rows)) seqOf.set(row.event_id, Number(row.seq));
      }
      const pending = events.flatMap((event): PendingRow[] =>
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
      for (const chunk of chunks(pending, INSERT_CHUNK)) await this.insertPending.execute(trx, chunk);
      return events.map((event) => storedEntry(event, seqOf.get(event.eventId)!, event.body));
    });
  }

  /**
   * Whether lanes' acknowledgements should wait for the end of the event loop's turn, to share one
   * statement: on SQLite, where each statement outside a transaction is a commit of its own (~40 µs
   * of the main thread for a one-row DELETE, ~6 µs per row in a shared one) and waiting costs no
   * round trip. With many instances the delivery thread's answers come one task each, an event each.
   */
  acknowledgesPerTurn(): boolean {
    return !isPostgres(this.db);
  }

  /** Whether `appendInOneStatement` may be used: on PostgreSQL. */
  storesInOneStatement(): boolean {
    return isPostgres(this.db);
  }

  /**
   * `append` as one statement on PostgreSQL: it advances the sequences, numbers and stores the
   * events, writes their pending rows and runs `alongside` (data-modifying statements of other
   * stores: the tick's message rows), all or nothing. Each statement is a round trip that waits its
   * turn on a busy event loop; the transaction's seven (begin, savepoint, the message rows, the
   * sequences, the events, their pending rows, commit) left the event loop idle half of the send
   * road's time. In cluster mode the fence runs first, in a transaction with it.
   */
  async appendInOneStatement(events: NewOutboxEvent[], alongside: RawBuilder<unknown>[] = []): Promise<OutboxEntry[]> {
    if (events.length === 0) return [];
    const fence = this.fence;
    if (!fence) return this.storeInOneStatement(this.db, events, alongside);
    return this.db.transaction().execute(async (trx) => {
      await passFence(fence, trx, [...new Set(events.map((event) => event.instanceId))]);
      return this.storeInOneStatement(trx, events, alongside);
    });
  }

  private async storeInOneStatement(
    db: Kysely<Database>,
    events: NewOutboxEvent[],
    alongside: RawBuilder<unknown>[],
  ): Promise<OutboxEntry[]> {
    const pendingOf: number[] = [];
    const pendingSink: string[] = [];
    events.forEach((event, i) => {
      for (const sink of event.sinks) {
        pendingOf.push(i + 1);
        pendingSink.push(sink);
      }
    });
    // Sequence rows are upserted in instance order (a fixed lock order between ticks); the events
    // are inserted in the order given, so `outbox.seq` follows it; `"seq":n` ends each body as
    // withSeq writes it. The pending rows' foreign key is checked at the end of the statement,
    // when its events are there.
    const others = alongside.map((statement, i) => sql`${sql.raw(`alongside_${i}`)} as (${statement}),`);
    const { rows } = await sql<{ seq: number | string; event_id: string; body: string }>`
      with ${sql.join(others, sql` `)} event as (
        select *
        from unnest(
          ${events.map((e) => e.eventId)}::text[], ${events.map((e) => e.instanceId)}::text[],
          ${events.map((e) => e.type)}::text[], ${events.map((e) => e.body)}::text[],
          ${events.map((e) => e.createdAt)}::bigint[]
        ) with ordinality as e(event_id, instance_id, event_type, body, created_at, position)
      ),
      tally as (select instance_id, count(*) as n from event group by instance_id),
      advanced as (
        insert into event_sequences as s (instance_id, seq)
        select instance_id, n from tally order by instance_id
        on conflict (instance_id) do update set seq = s.seq + excluded.seq
        returning s.instance_id, s.seq
      ),
      numbered as (
        select event.*, advanced.seq - tally.n + row_number() over (partition by event.instance_id order by event.position) as number
        from event
        join advanced on advanced.instance_id = event.instance_id
        join tally on tally.instance_id = event.instance_id
      ),
      stored as (
        insert into outbox (event_id, instance_id, event_type, body, created_at)
        select event_id, instance_id, event_type,
               case when body = '{}' then '{"seq":' || number || '}' else left(body, -1) || ',"seq":' || number || '}' end,
               created_at
        from numbered order by position
        returning seq, event_id, body
      ),
      pending as (
        insert into outbox_pending (seq, sink, instance_id, attempts, next_attempt_at)
        select stored.seq, wanted.sink, numbered.instance_id, 0, numbered.created_at
        from unnest(${pendingOf}::bigint[], ${pendingSink}::text[]) as wanted(position, sink)
        join numbered on numbered.position = wanted.position
        join stored on stored.event_id = numbered.event_id
      )
      select seq, event_id, body from stored
    `.execute(db);
    const byId = new Map(rows.map((row) => [row.event_id, row]));
    return events.map((event) => {
      const row = byId.get(event.eventId)!;
      return storedEntry(event, Number(row.seq), row.body);
    });
  }

  /**
   * `pending` of several lanes at once, a page each, in the order asked. On PostgreSQL one statement
   * (a lateral join) per page size and per 200 lanes; SQLite has no round trip to save and reads
   * lane by lane.
   */
  async pendingOfLanes(lanes: readonly LanePage[]): Promise<PendingDelivery[][]> {
    if (lanes.length === 1 || !isPostgres(this.db)) {
      const pages: PendingDelivery[][] = [];
      for (const lane of lanes) pages.push(await this.pending(lane.sink, lane.instanceId, lane.limit));
      return pages;
    }
    const pages = lanes.map((): PendingDelivery[] => []);
    // One statement per page size and per LANES_PER_READ lanes (a resume after a long outage wakes
    // every lane at once: its pages come in several results, not one).
    const groups = new Map<number, number[]>();
    lanes.forEach((lane, i) => {
      let group = groups.get(lane.limit);
      if (!group) groups.set(lane.limit, (group = []));
      group.push(i);
    });
    for (const [limit, indexes] of [...groups].flatMap(([limit, all]) =>
      chunks(all, LANES_PER_READ).map((part) => [limit, part] as const),
    )) {
      const { rows } = await sql<PendingReadRow & { lane: string }>`
        select o.seq, o.event_id, o.instance_id, i.name, o.event_type, o.body, o.created_at, p.attempts,
               p.next_attempt_at, l.lane
        from unnest(${indexes.map((i) => lanes[i]!.sink)}::text[], ${indexes.map((i) => lanes[i]!.instanceId)}::text[])
             with ordinality as l(sink, instance_id, lane)
        cross join lateral (
          select q.seq, q.attempts, q.next_attempt_at from outbox_pending q
          where q.sink = l.sink and q.instance_id = l.instance_id
          order by q.seq limit ${limit}
        ) p
        join outbox o on o.seq = p.seq
        join instances i on i.id = o.instance_id
        order by l.lane, p.seq`.execute(this.db);
      for (const row of rows) pages[indexes[Number(row.lane) - 1]!]!.push(pendingDelivery(row));
    }
    return pages;
  }

  /** The next pending deliveries of one sink for one instance, oldest first. */
  async pending(sink: string, instanceId: string, limit: number): Promise<PendingDelivery[]> {
    const rows = await this.pendingRead.execute(this.db, sink, instanceId, limit);
    return rows.map(pendingDelivery);
  }

  /** `pending`'s statement, built once: with many instances a lane reads a page per event. */
  private readonly pendingRead = new CompiledStatement((db: Kysely<Database>, sink: string, instanceId: string, limit: number) =>
    db
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
      .limit(limit),
  );

  /** Every (sink, instance) pair with deliveries waiting: the lanes to resume after a restart. */
  async lanes(): Promise<{ sink: string; instanceId: string }[]> {
    const rows = await this.db.selectFrom('outbox_pending').select(['sink', 'instance_id']).distinct().execute();
    return rows.map((row) => ({ sink: row.sink, instanceId: row.instance_id }));
  }

  /** The sinks with pending deliveries of one instance. */
  async lanesOf(instanceId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('outbox_pending').select('sink').distinct().where('instance_id', '=', instanceId).execute();
    return rows.map((row) => row.sink);
  }

  async ack(seq: number, sink: string): Promise<void> {
    await this.ackMany([seq], sink);
  }

  /** Acknowledges several deliveries of one sink in one statement. */
  async ackMany(seqs: number[], sink: string): Promise<void> {
    if (seqs.length === 0) return;
    await this.db.deleteFrom('outbox_pending').where('sink', '=', sink).where('seq', 'in', seqs).execute();
  }

  /** Deliveries of several lanes acknowledged at once: one statement per sink (and per chunk). */
  async ackLanes(acks: readonly { sink: string; seqs: readonly number[] }[]): Promise<void> {
    const bySink = new Map<string, number[]>();
    for (const { sink, seqs } of acks) {
      let list = bySink.get(sink);
      if (!list) bySink.set(sink, (list = []));
      for (const seq of seqs) list.push(seq);
    }
    for (const [sink, seqs] of bySink) for (const chunk of chunks(seqs, ACK_CHUNK)) await this.ackMany(chunk, sink);
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

  /** Creation time (epoch ms) of the oldest event each sink has yet to deliver. */
  async oldestPendingBySink(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('outbox_pending as p')
      .innerJoin('outbox as o', 'o.seq', 'p.seq')
      .select(['p.sink', (eb) => eb.fn.min('o.created_at').as('oldest')])
      .groupBy('p.sink')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.sink, Number(row.oldest)]));
  }

  /**
   * Deliveries waiting for sinks that are not configured now (a broker URL removed or mistyped).
   * They are kept — setting the URL again delivers them — and reported, since they also keep their
   * events from pruning.
   */
  async pendingOfUnknownSinks(configured: string[]): Promise<Record<string, number>> {
    return Object.fromEntries(Object.entries(await this.pendingBySink()).filter(([sink]) => !configured.includes(sink)));
  }

  /**
   * Delivered events older than the cutoff (those with no pending deliveries left) leave the outbox.
   * With `archive` they move to the event archive first (one transaction per chunk; backfills read
   * it), else they are deleted. Chunks of PRUNE_CHUNK rows, oldest first along outbox_created, keep
   * each write short so appends are not held up behind a large prune.
   */
  async prune(olderThan: number, archive = false): Promise<number> {
    let total = 0;
    for (;;) {
      const seqs = (
        await this.db
          .selectFrom('outbox')
          .select('seq')
          .where('created_at', '<', olderThan)
          .where((eb) => eb.not(eb.exists(eb.selectFrom('outbox_pending as p').select('p.seq').whereRef('p.seq', '=', 'outbox.seq'))))
          .orderBy('created_at')
          .orderBy('seq')
          .limit(PRUNE_CHUNK)
          .execute()
      ).map((row) => Number(row.seq));
      if (seqs.length === 0) return total;
      total += await this.db.transaction().execute(async (trx) => {
        // A delivery added in between (a dead-letter retry) keeps its event: re-checked in the statement.
        const stillDelivered = (eb: ExpressionBuilder<Database, 'outbox'>) =>
          eb.and([
            eb('outbox.seq', 'in', seqs),
            eb.not(eb.exists(eb.selectFrom('outbox_pending as p').select('p.seq').whereRef('p.seq', '=', 'outbox.seq'))),
          ]);
        if (archive) {
          await trx
            .insertInto('event_archive')
            .columns(['seq', 'event_id', 'instance_id', 'event_type', 'body', 'created_at'])
            .expression(
              trx.selectFrom('outbox').select(['seq', 'event_id', 'instance_id', 'event_type', 'body', 'created_at']).where(stillDelivered),
            )
            .onConflict((oc) => oc.column('seq').doNothing())
            .execute();
        }
        const result = await trx.deleteFrom('outbox').where(stillDelivered).executeTakeFirst();
        return Number(result.numDeletedRows);
      });
      if (seqs.length < PRUNE_CHUNK) return total;
      // SQLite answers without a turn of the event loop: without this, a minute of events moved in
      // one go held every request for the whole prune (~2 s for 120,000 events).
      await nextTurn();
    }
  }

  /** Archived events older than the cutoff are deleted (EVENT_ARCHIVE_DAYS). */
  async pruneArchive(olderThan: number): Promise<number> {
    const result = await this.db.deleteFrom('event_archive').where('created_at', '<', olderThan).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Pending deliveries per instance (every sink): the outbox backlog. */
  async pendingByInstance(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('outbox_pending')
      .select(['instance_id', (eb) => eb.fn.countAll().as('n')])
      .groupBy('instance_id')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.instance_id, Number(row.n)]));
  }

  /** The waiting deliveries grouped by (sink, instance), largest backlog first, paged. */
  async backlog(
    filter: { sink?: string | undefined; instanceId?: string | undefined },
    offset: number,
    limit: number,
  ): Promise<{ items: BacklogLane[]; total: number }> {
    let query = this.db.selectFrom('outbox_pending as p').innerJoin('outbox as o', 'o.seq', 'p.seq');
    if (filter.sink) query = query.where('p.sink', '=', filter.sink);
    if (filter.instanceId) query = query.where('p.instance_id', '=', filter.instanceId);
    const [rows, count] = await Promise.all([
      query
        .select((eb) => [
          'p.sink',
          'p.instance_id',
          eb.fn.countAll().as('n'),
          eb.fn.min('o.created_at').as('oldest'),
          eb.fn.max('p.attempts').as('max_attempts'),
        ])
        .groupBy(['p.sink', 'p.instance_id'])
        .orderBy('n', 'desc')
        .orderBy('p.sink')
        .orderBy('p.instance_id')
        .offset(offset)
        .limit(limit)
        .execute(),
      this.db
        .selectFrom(query.select(['p.sink', 'p.instance_id']).distinct().as('lanes'))
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow(),
    ]);
    return {
      items: rows.map((row) => ({
        sink: row.sink,
        instanceId: row.instance_id,
        pending: Number(row.n),
        oldestCreatedAt: Number(row.oldest),
        maxAttempts: Number(row.max_attempts),
      })),
      total: Number(count.n),
    };
  }

  /** Sequence number of a stored event (live outbox or archive), or undefined. */
  async seqOf(eventId: string): Promise<{ seq: number; instanceId: string } | undefined> {
    const live = await this.db.selectFrom('outbox').select(['seq', 'instance_id']).where('event_id', '=', eventId).executeTakeFirst();
    const row =
      live ?? (await this.db.selectFrom('event_archive').select(['seq', 'instance_id']).where('event_id', '=', eventId).executeTakeFirst());
    return row ? { seq: Number(row.seq), instanceId: row.instance_id } : undefined;
  }

  /** The highest sequence number stored so far (0 when empty). */
  async lastSeq(): Promise<number> {
    const live = await this.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.max('seq').as('m'))
      .executeTakeFirst();
    const archived = await this.db
      .selectFrom('event_archive')
      .select((eb) => eb.fn.max('seq').as('m'))
      .executeTakeFirst();
    return Math.max(Number(live?.m ?? 0), Number(archived?.m ?? 0));
  }

  /**
   * Stored events of one instance (live outbox and archive together) in sequence order, after
   * `afterSeq` and up to `range.toSeq`, within the time bounds and types given.
   */
  async history(instanceId: string, afterSeq: number, range: HistoryRange, limit: number): Promise<StoredEvent[]> {
    // The outbox first, then the archive: an event moved in between shows in both and is kept once.
    const [live, archived] = [
      await this.historyOf('outbox', instanceId, afterSeq, range, limit),
      await this.historyOf('event_archive', instanceId, afterSeq, range, limit),
    ];
    const bySeq = new Map<number, StoredEvent>();
    for (const event of [...live, ...archived]) bySeq.set(event.seq, event);
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(0, limit);
  }

  /** How many stored events of one instance fall in the range. */
  async historyCount(instanceId: string, range: HistoryRange): Promise<number> {
    let total = 0;
    for (const table of ['outbox', 'event_archive'] as const) {
      const row = await this.rangeQuery(table, instanceId, 0, range)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      total += Number(row.n);
    }
    return total;
  }

  private rangeQuery(table: 'outbox' | 'event_archive', instanceId: string, afterSeq: number, range: HistoryRange) {
    let query = (this.db as Kysely<Pick<Database, 'outbox'>>)
      .selectFrom(table as 'outbox')
      .where('instance_id', '=', instanceId)
      .where('seq', '>', afterSeq)
      .where('seq', '>=', range.fromSeq)
      .where('seq', '<=', range.toSeq);
    if (range.sinceAt !== null) query = query.where('created_at', '>=', range.sinceAt);
    if (range.untilAt !== null) query = query.where('created_at', '<=', range.untilAt);
    if (range.types && range.types.length > 0) query = query.where('event_type', 'in', range.types);
    return query;
  }

  private async historyOf(
    table: 'outbox' | 'event_archive',
    instanceId: string,
    afterSeq: number,
    range: HistoryRange,
    limit: number,
  ): Promise<StoredEvent[]> {
    const rows = await this.rangeQuery(table, instanceId, afterSeq, range)
      .select(['seq', 'event_id', 'instance_id', 'event_type', 'body', 'created_at'])
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      seq: Number(row.seq),
      eventId: row.event_id,
      instanceId: row.instance_id,
      type: row.event_type as EventType,
      body: row.body,
      createdAt: Number(row.created_at),
    }));
  }
}

export interface BacklogLane {
  sink: string;
  instanceId: string;
  pending: number;
  oldestCreatedAt: number;
  maxAttempts: number;
}

/** Bounds of a history read; every bound inclusive. */
export interface HistoryRange {
  fromSeq: number;
  toSeq: number;
  sinceAt: number | null;
  untilAt: number | null;
  types: string[] | null;
}

export type StoredEvent = Omit<OutboxEntry, 'instanceName'>;
