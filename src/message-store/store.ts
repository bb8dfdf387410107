/**
 * The message store: every message an instance sent or received (from MESSAGE and SEND_MESSAGE
 * events), so later requests can quote it, forward it or download its media by message id.
 */
import { sql, type Kysely, type OnConflictBuilder, type RawBuilder } from 'kysely';
import type { ChatMessages, MessageFilter, MessageKey, StoredMessage } from '../network/port.js';

// The stored shapes are declared by the port, which hands this store to the drivers.
export { messageTypeOf } from '../network/port.js';
export type { MessageFilter, StoredMedia, StoredMessage } from '../network/port.js';
import { NOT_POLL_VOTE, POLL_VOTE_TYPE } from '../storage/expressions.js';
import { isPostgres } from '../storage/db.js';
import { totalOf } from '../storage/paging.js';
import { CompiledInsert } from '../storage/compiled-statements.js';
import type { Database } from '../storage/schema.js';

export { POLL_VOTE_TYPE };

type MessageRow = Database['messages'];

/** `message_type` of a message deleted for everyone (its content and media are gone). */
export const REVOKED_TYPE = 'revoked';

/** The columns a message is read back from (not `body_text`, the search column the database keeps). */
const COLUMNS = [
  'instance_id',
  'message_id',
  'remote_jid',
  'from_me',
  'participant',
  'push_name',
  'message_type',
  'content',
  'message_timestamp',
  'media_key',
  'media_mimetype',
  'media_size',
  'media_file_name',
  'media_sha256',
  'created_at',
] as const satisfies readonly (keyof MessageRow)[];
/** The same list for hand-written statements, qualified with `alias`. */
const columnsOf = (alias: string) => sql.raw(COLUMNS.map((column) => `${alias}.${column}`).join(', '));
/** Listings leave poll votes out with the condition the read indexes are partial on. */
const notPollVote = sql<boolean>`${sql.raw(NOT_POLL_VOTE)}`;

export interface StoredPollVote {
  voter: string;
  selectedOptions: string[];
  messageTimestamp: number;
}

/** A LIKE pattern (backslash escapes) matching values that contain `text`. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

interface PendingWrite {
  row: MessageRow;
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** PostgreSQL's type of each column, for the arrays `asStatement` sends. */
const ARRAY_TYPES: Record<(typeof COLUMNS)[number], string> = {
  instance_id: 'text[]',
  message_id: 'text[]',
  remote_jid: 'text[]',
  from_me: 'integer[]',
  participant: 'text[]',
  push_name: 'text[]',
  message_type: 'text[]',
  content: 'text[]',
  message_timestamp: 'bigint[]',
  media_key: 'text[]',
  media_mimetype: 'text[]',
  media_size: 'bigint[]',
  media_file_name: 'text[]',
  media_sha256: 'text[]',
  created_at: 'bigint[]',
};

/** A message saved again (an edit, a media download) keeps its media unless the new save has some. */
function updateOnConflict(conflict: OnConflictBuilder<Database, 'messages'>) {
  return conflict.columns(['instance_id', 'message_id']).doUpdateSet((eb) => ({
    content: eb.ref('excluded.content'),
    message_type: eb.ref('excluded.message_type'),
    media_key: eb.fn.coalesce('excluded.media_key', 'messages.media_key'),
    media_mimetype: eb.fn.coalesce('excluded.media_mimetype', 'messages.media_mimetype'),
    media_size: eb.fn.coalesce('excluded.media_size', 'messages.media_size'),
    media_file_name: eb.fn.coalesce('excluded.media_file_name', 'messages.media_file_name'),
    media_sha256: eb.fn.coalesce('excluded.media_sha256', 'messages.media_sha256'),
  }));
}

export class MessageStore implements ChatMessages {
  /** Rows waiting for the next multi-row write, by `<instanceId> <messageId>`. */
  private batch = new Map<string, PendingWrite>();
  /**
   * Batches taken for a write that has not finished, so a read right after a send sees its message
   * (with `batch`, the rows waiting). Not a map of every message in flight: a long-lived map with a set
   * and a delete per message had V8 rebuild its table in the old generation again and again.
   */
  private readonly writing: Map<string, PendingWrite>[] = [];
  private flushing: Promise<void> | undefined;
  /** Set once the event bus commits these rows with its outbox rows (`writeIn`): its tick under way, if any. */
  private outboxTick: (() => Promise<void> | undefined) | undefined;
  /** Rows taken into the outbox's transaction and not yet committed (or given back). */
  private readonly shared = new Set<Promise<void>>();

  /** The tick's upsert, built once per row count (storage/compiled-insert.ts). */
  private readonly upsert = new CompiledInsert((db: Kysely<Database>, rows: MessageRow[]) =>
    db.insertInto('messages').values(rows).onConflict(updateOnConflict),
  );

  constructor(private readonly db: Kysely<Database>) {}

  /**
   * From now on the rows of a tick are written in the event outbox's transaction when one runs
   * (`writeIn`), so a send costs one commit for its message and its events. While the outbox has a
   * tick (events waiting or being stored) the store's own flush waits for it: that tick takes the
   * rows. The store writes them itself once the outbox is idle (messages whose event was filtered out).
   */
  shareCommits(outboxTick: () => Promise<void> | undefined): void {
    this.outboxTick = outboxTick;
  }

  private scheduleFlush(): void {
    this.flushing = new Promise<void>((finished) => {
      const attempt = () => {
        const tick = this.batch.size > 0 ? this.outboxTick?.() : undefined;
        if (tick) void tick.then(attempt);
        else void this.flush().finally(finished);
      };
      setImmediate(attempt);
    });
  }

  /**
   * Takes the waiting rows for a write of the outbox's tick: `failed` gives them back to the store's
   * own flush (a newer save of the same message, already waiting, wins).
   */
  private take(): { rows: MessageRow[]; committed: () => void; failed: () => void } | undefined {
    if (this.batch.size === 0) return undefined;
    const taken = this.takeBatch();
    const batch = [...taken.values()];
    let settle!: () => void;
    const pending = new Promise<void>((resolve) => (settle = resolve));
    this.shared.add(pending);
    const done = () => {
      this.shared.delete(pending);
      this.written(taken);
      settle();
    };
    return {
      rows: batch.map((waiting) => waiting.row),
      committed: () => {
        for (const waiting of batch) waiting.resolve();
        done();
      },
      failed: () => {
        for (const waiting of batch) {
          const id = `${waiting.row.instance_id} ${waiting.row.message_id}`;
          if (!this.batch.has(id)) this.batch.set(id, waiting);
        }
        done();
        if (!this.flushing) this.scheduleFlush();
      },
    };
  }

  /**
   * Writes the waiting rows with `trx` (a bad row gives them back for the store's own row-by-row
   * flush instead of failing the caller's transaction). The caller reports
   * the outcome of its commit; undefined when there was nothing to write.
   */
  async writeIn(trx: Kysely<Database>): Promise<{ committed(): void; failed(): void } | undefined> {
    const taken = this.take();
    if (!taken) return undefined;
    // PostgreSQL aborts the whole transaction on a failed statement unless it ran in a savepoint;
    // SQLite undoes only the failed statement (rows of an earlier chunk that stay are written again
    // by the store's flush, an idempotent upsert), so it needs none: two statements less per tick.
    // The savepoint is not released: the commit releases it, one round trip less per tick (each one
    // waits its turn on a busy event loop: ~1 ms under the send road's load).
    const savepoint = this.postgres();
    try {
      if (savepoint) await sql`savepoint message_rows`.execute(trx);
      try {
        for (let i = 0; i < taken.rows.length; i += 500) await this.write(taken.rows.slice(i, i + 500), trx);
      } catch {
        if (savepoint) await sql`rollback to savepoint message_rows`.execute(trx);
        taken.failed();
        return undefined;
      }
    } catch (error) {
      taken.failed();
      throw error;
    }
    return taken;
  }

  /**
   * PostgreSQL: the waiting rows as one upsert for the outbox to run inside its own statement (one
   * round trip per tick: OutboxStore.appendInOneStatement). Each column goes as one array, so the
   * text is the same for any number of rows. A bad row fails that statement whole; the caller then
   * reports `failed` and stores the tick again as a transaction, where `writeIn` takes the rows.
   */
  asStatement(): { statement: RawBuilder<unknown>; committed(): void; failed(): void } | undefined {
    const taken = this.take();
    if (!taken) return undefined;
    const arrays = COLUMNS.map((name) => sql`${taken.rows.map((row) => row[name])}::${sql.raw(ARRAY_TYPES[name])}`);
    const statement = this.db
      .insertInto('messages')
      .columns([...COLUMNS])
      .expression(sql`select * from unnest(${sql.join(arrays)})`)
      .onConflict(updateOnConflict);
    return { statement: sql`${statement}`, committed: taken.committed, failed: taken.failed };
  }

  /**
   * Stores (or updates) a message. Writes of the same tick share one statement, so recording
   * messages does not slow the send road; the promise resolves once the row is written.
   */
  save(message: StoredMessage): Promise<void> {
    const row = toRow(message);
    const id = `${row.instance_id} ${row.message_id}`;
    const waiting = this.batch.get(id);
    if (waiting) {
      // The same message twice in one batch (an update): one row, the newest content, any media kept.
      waiting.row = { ...row, ...(row.media_key ? {} : pickMedia(waiting.row)) };
      return waiting.done;
    }
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.batch.set(id, { row, done, resolve, reject });
    if (!this.flushing) this.scheduleFlush();
    return done;
  }

  /** Resolves once every message saved so far is written. */
  async settled(): Promise<void> {
    while (this.flushing || this.shared.size > 0) {
      if (this.flushing) await this.flushing;
      else await Promise.all(this.shared);
    }
  }

  private async flush(): Promise<void> {
    // Rows in the outbox's transaction commit first: a later save of the same message must not be overtaken.
    while (this.shared.size > 0) await Promise.all(this.shared);
    const taken = this.takeBatch();
    const batch = [...taken.values()];
    try {
      // SQLite allows 32766 bound values per statement; 15 columns a row keeps well inside that.
      for (let i = 0; i < batch.length; i += 500) await this.write(batch.slice(i, i + 500).map((w) => w.row));
      for (const waiting of batch) waiting.resolve();
    } catch {
      // One bad row (its instance was just deleted) must not sink the others: write them one by one.
      for (const waiting of batch) {
        await this.write([waiting.row]).then(waiting.resolve, waiting.reject);
      }
    } finally {
      this.written(taken);
      this.flushing = undefined;
      if (this.batch.size > 0) this.scheduleFlush();
    }
  }

  /** The waiting rows, now being written (a new batch gathers the next ones). */
  private takeBatch(): Map<string, PendingWrite> {
    const taken = this.batch;
    this.batch = new Map();
    this.writing.push(taken);
    return taken;
  }

  private written(taken: Map<string, PendingWrite>): void {
    const at = this.writing.indexOf(taken);
    if (at >= 0) this.writing.splice(at, 1);
  }

  private async write(rows: MessageRow[], db: Kysely<Database> = this.db): Promise<void> {
    await this.upsert.execute(db, rows);
  }

  async find(instanceId: string, messageId: string): Promise<StoredMessage | undefined> {
    const id = `${instanceId} ${messageId}`;
    // The newest save: a waiting row, else the one in the latest batch being written.
    const pending = this.batch.get(id) ?? this.writing.findLast((taken) => taken.has(id))?.get(id);
    await pending?.done.catch(() => undefined);
    const row = await this.db
      .selectFrom('messages')
      .select(COLUMNS)
      .where('instance_id', '=', instanceId)
      .where('message_id', '=', messageId)
      .where('message_type', '!=', POLL_VOTE_TYPE)
      .executeTakeFirst();
    return row ? fromRow(row) : undefined;
  }

  /** Messages of an instance matching `filter`, newest first (poll votes not included). */
  async search(
    instanceId: string,
    filter: MessageFilter,
    page: { offset: number; limit: number },
  ): Promise<{ items: StoredMessage[]; total: number }> {
    await this.settled();
    let query = this.db.selectFrom('messages').where('instance_id', '=', instanceId).where(notPollVote);
    if (filter.remoteJid !== undefined) query = query.where('remote_jid', '=', filter.remoteJid);
    if (filter.messageId !== undefined) query = query.where('message_id', '=', filter.messageId);
    if (filter.fromMe !== undefined) query = query.where('from_me', '=', filter.fromMe ? 1 : 0);
    if (filter.since !== undefined) query = query.where('message_timestamp', '>=', filter.since);
    if (filter.until !== undefined) query = query.where('message_timestamp', '<=', filter.until);
    if (filter.text !== undefined) {
      // body_text is the message's text or caption (storage/expressions.ts): the same test as reading
      // it from the JSON, without parsing the JSON of every row. Case-insensitive as the database's
      // lower() is (ASCII on SQLite, the collation's on PostgreSQL).
      query = query.where(sql<boolean>`lower(body_text) like lower(${containing(filter.text)}) escape '\\'`);
    }
    const count = query.select((eb) => eb.fn.countAll<number | string>().as('n'));
    const newestFirst = query
      .select(COLUMNS)
      .orderBy('message_timestamp', 'desc')
      .orderBy('created_at', 'desc')
      .orderBy('message_id', 'desc')
      .offset(page.offset)
      .limit(page.limit);
    // One statement for the page and its count, except where the count costs what the page does
    // (a text filter reads every candidate's text): there the page comes first, and a page that is
    // not full tells the total without counting.
    const rows = filter.text === undefined ? await newestFirst.select(count.as('total')).execute() : await newestFirst.execute();
    const total = totalOf(rows, page) ?? Number((await count.executeTakeFirst())?.n ?? 0);
    return { items: rows.map(fromRow), total };
  }

  async latestOfChats(instanceId: string, chats: { remoteJid: string; since?: number }[]): Promise<Map<string, StoredMessage>> {
    const out = new Map<string, StoredMessage>();
    if (chats.length === 0) return out;
    await this.settled();
    // One statement of fixed text (planned once, whatever the page size): per chat, the first row of
    // a backward walk of messages_chat_newest. The chats travel as one array parameter.
    const jids = chats.map((chat) => chat.remoteJid);
    const sinces = chats.map((chat) => chat.since ?? -1);
    const rows = this.postgres()
      ? await sql<MessageRow>`
          select ${columnsOf('m')} from unnest(${jids}::text[], ${sinces}::bigint[]) as c(jid, since)
          cross join lateral (
            select ${columnsOf('x')} from messages x
            where x.instance_id = ${instanceId} and x.remote_jid = c.jid and x.${sql.raw(NOT_POLL_VOTE)}
              and x.message_timestamp >= c.since
            order by x.message_timestamp desc, x.created_at desc, x.message_id desc
            limit 1
          ) m`.execute(this.db)
      : await sql<MessageRow>`
          select ${columnsOf('messages')} from messages where rowid in (
            select (
              select x.rowid from messages x
              where x.instance_id = ${instanceId} and x.remote_jid = c.value ->> '$[0]' and x.${sql.raw(NOT_POLL_VOTE)}
                and x.message_timestamp >= c.value ->> '$[1]'
              order by x.message_timestamp desc, x.created_at desc, x.message_id desc
              limit 1
            ) from json_each(${JSON.stringify(chats.map((chat, i) => [chat.remoteJid, sinces[i]]))}) as c
          )`.execute(this.db);
    for (const row of rows.rows) out.set(row.remote_jid, fromRow(row));
    return out;
  }

  private postgres(): boolean {
    return isPostgres(this.db);
  }

  /**
   * Replaces the content of a stored message (an edit, or a deletion for everyone with
   * REVOKED_TYPE and `{}`); a revoked message also loses its media. Returns the media key it
   * dropped, for the caller to delete from the media store.
   */
  async replaceContent(
    instanceId: string,
    messageId: string,
    messageType: string,
    content: Record<string, unknown>,
  ): Promise<string | undefined> {
    const current = await this.find(instanceId, messageId);
    if (!current) return undefined;
    const revoked = messageType === REVOKED_TYPE;
    await this.db
      .updateTable('messages')
      .set({
        message_type: messageType,
        content: JSON.stringify(content),
        ...(revoked ? { media_key: null, media_mimetype: null, media_size: null, media_file_name: null, media_sha256: null } : {}),
      })
      .where('instance_id', '=', instanceId)
      .where('message_id', '=', messageId)
      .execute();
    return revoked ? current.media?.key : undefined;
  }

  /** Keeps a decrypted poll vote (the vote message's id, the voter and the option names). */
  savePollVote(
    instanceId: string,
    vote: { key: MessageKey; pollMessageId: string; voter: string; selectedOptions: string[]; messageTimestamp: number; createdAt: number },
  ): Promise<void> {
    return this.save({
      instanceId,
      key: vote.key,
      participant: vote.voter,
      messageType: POLL_VOTE_TYPE,
      message: { pollMessageId: vote.pollMessageId, selectedOptions: vote.selectedOptions },
      messageTimestamp: vote.messageTimestamp,
      createdAt: vote.createdAt,
    });
  }

  /** The latest vote of each voter in a poll, oldest first. */
  async pollVotes(instanceId: string, pollMessageId: string): Promise<StoredPollVote[]> {
    await this.settled();
    const rows = await this.db
      .selectFrom('messages')
      .select(['participant', 'content', 'message_timestamp'])
      .where('instance_id', '=', instanceId)
      .where('message_type', '=', POLL_VOTE_TYPE)
      .where(sql<boolean>`content like ${containing(JSON.stringify(pollMessageId))} escape '\\'`)
      .orderBy('message_timestamp', 'asc')
      .orderBy('created_at', 'asc')
      .execute();
    const latest = new Map<string, StoredPollVote>();
    for (const row of rows) {
      const vote = JSON.parse(row.content) as { pollMessageId?: string; selectedOptions?: string[] };
      if (vote.pollMessageId !== pollMessageId || !row.participant) continue;
      latest.delete(row.participant);
      latest.set(row.participant, {
        voter: row.participant,
        selectedOptions: vote.selectedOptions ?? [],
        messageTimestamp: Number(row.message_timestamp),
      });
    }
    return [...latest.values()];
  }

  /** Which of `keys` a stored message references (the orphan media sweep keeps those). */
  async referencedMediaKeys(keys: string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    await this.settled();
    const rows = await this.db.selectFrom('messages').select('media_key').where('media_key', 'in', keys).execute();
    return new Set(rows.flatMap((row) => (row.media_key ? [row.media_key] : [])));
  }

  /**
   * Deletes up to `limit` messages stored before `before` (ms) and returns the media keys they
   * held, for the caller to delete from the media store.
   */
  async pruneBatch(before: number, limit = 500): Promise<{ deleted: number; mediaKeys: string[] }> {
    const rows = await this.db
      .selectFrom('messages')
      .select(['instance_id', 'message_id', 'media_key'])
      .where('created_at', '<', before)
      .limit(limit)
      .execute();
    // One commit for the batch, not one per row.
    await this.db.transaction().execute(async (trx) => {
      for (const row of rows) {
        await trx.deleteFrom('messages').where('instance_id', '=', row.instance_id).where('message_id', '=', row.message_id).execute();
      }
    });
    return { deleted: rows.length, mediaKeys: rows.flatMap((r) => (r.media_key ? [r.media_key] : [])) };
  }

  /** Messages the instances sent (from_me) stored at or after `since` (ms), all instances together. */
  async countSentSince(since: number): Promise<number> {
    const row = await this.db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('created_at', '>=', since)
      .where('from_me', '=', 1)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}

function toRow(message: StoredMessage): MessageRow {
  const media = message.media;
  return {
    instance_id: message.instanceId,
    message_id: message.key.id,
    remote_jid: message.key.remoteJid,
    from_me: message.key.fromMe ? 1 : 0,
    participant: message.participant ?? null,
    push_name: message.pushName ?? null,
    message_type: message.messageType,
    content: JSON.stringify(message.message),
    message_timestamp: message.messageTimestamp,
    media_key: media?.key ?? null,
    media_mimetype: media?.mimetype ?? null,
    media_size: media?.size ?? null,
    media_file_name: media?.fileName ?? null,
    media_sha256: media?.sha256 ?? null,
    created_at: message.createdAt,
  };
}

function pickMedia(row: MessageRow): Partial<MessageRow> {
  return {
    media_key: row.media_key,
    media_mimetype: row.media_mimetype,
    media_size: row.media_size,
    media_file_name: row.media_file_name,
    media_sha256: row.media_sha256,
  };
}

function fromRow(row: MessageRow): StoredMessage {
  return {
    instanceId: row.instance_id,
    key: { remoteJid: row.remote_jid, fromMe: Number(row.from_me) === 1, id: row.message_id },
    ...(row.participant ? { participant: row.participant } : {}),
    ...(row.push_name ? { pushName: row.push_name } : {}),
    messageType: row.message_type,
    message: JSON.parse(row.content) as Record<string, unknown>,
    messageTimestamp: Number(row.message_timestamp),
    ...(row.media_key && row.media_mimetype
      ? {
          media: {
            key: row.media_key,
            mimetype: row.media_mimetype,
            size: Number(row.media_size ?? 0),
            ...(row.media_file_name ? { fileName: row.media_file_name } : {}),
            sha256: row.media_sha256 ?? '',
          },
        }
      : {}),
    createdAt: Number(row.created_at),
  };
}
