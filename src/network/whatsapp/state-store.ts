/**
 * What WhatsApp does not serve on demand, kept in the gateway's database from the driver's events
 * (migration `0007_whatsapp_chats`): chats with their pin/archive/mute/unread state, contacts,
 * business labels and what they are on, and the call log. Messages are in the gateway's message
 * store (`messages`); history-sync messages are added there too, so chat history covers them.
 *
 * Addresses are stored as events show them (`LidDirectory.resolve`: the phone JID when known), so
 * a chat id from the API, a message's `remoteJid` and a chat row agree. Times are Unix seconds.
 */
import { isWABusinessPlatform, type BaileysEventMap, type ChatUpdate, type WACallEvent } from 'baileys';
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { Clock } from '../../clock.js';
import { messageTypeOf, type ChatFilter, type ChatMessages, type PageRequest } from '../port.js';
import { CompiledInsert } from '../../storage/compiled-statements.js';
import { CHAT_LIST_ORDER, NOT_POLL_VOTE } from '../../storage/expressions.js';
import { isPostgres } from '../../storage/db.js';
import { totalOf } from '../../storage/paging.js';
import type { Database, WhatsAppCallsTable, WhatsAppChatsTable, WhatsAppContactsTable, WhatsAppLabelsTable } from '../../storage/schema.js';
import type { LidDirectory } from './addresses.js';
import { isUserMessage, messageData, toSeconds } from './translate-in.js';

export type ChatRow = Selectable<WhatsAppChatsTable>;
export type ContactRow = Selectable<WhatsAppContactsTable>;
export type LabelRow = Selectable<WhatsAppLabelsTable>;
export type CallRow = Selectable<WhatsAppCallsTable>;

/** What the driver uses of the gateway's message store (handed in through the port). */
export type ChatMessageSource = ChatMessages;

/** Fields of a chat an event or an operation sets; absent ones stay as they are. */
export interface ChatPatch {
  name?: string | null;
  unreadCount?: number;
  markedUnread?: boolean;
  pinnedAt?: number | null;
  archived?: boolean;
  /** -1 for ever, null not muted. */
  mutedUntil?: number | null;
  /** Only moves forward. */
  conversationTimestamp?: number;
  clearedBefore?: number;
  deleted?: boolean;
}

/** One `patchChat` in `writeChats`. */
export interface ChatWrite {
  jid: string;
  patch: ChatPatch;
}

/**
 * What new messages do to their chat (`touchChats`): its time moves on to `at` (never back), unread
 * grows by `unread`, a deleted chat comes back.
 */
export interface ChatTouch {
  jid: string;
  at: number;
  unread: number;
}

/** Chat writes per transaction in `writeChats`: the storage's one SQLite connection is held meanwhile. */
const CHAT_WRITES_PER_COMMIT = 200;

/**
 * A chat row's columns, named: the chat list reads them by name rather than `c.*`, so PostgreSQL may
 * keep the statement prepared (storage/pg-statements.ts) across another process's migration. A
 * column missing here fails to compile where the rows become `ListedChat`.
 */
const CHAT_COLUMNS = [
  'instance_id',
  'jid',
  'name',
  'unread_count',
  'marked_unread',
  'pinned_at',
  'archived',
  'muted_until',
  'conversation_timestamp',
  'cleared_before',
  'deleted',
  'updated_at',
] as const satisfies readonly (keyof WhatsAppChatsTable)[];
const LISTED_CHAT_COLUMNS = CHAT_COLUMNS.map((column) => `c.${column}` as const);

/** A chat as the list reads it: its row, its contact's name, its own label ids (sorted). */
export type ListedChat = ChatRow & {
  contact_name: string | null;
  labels: string[];
  /** Whether a label is on one of its messages (then its last message's labels are read). */
  labelled_messages: boolean;
};

export interface ContactPatch {
  jid: string;
  name?: string | null;
  notify?: string | null;
  verifiedName?: string | null;
}

/** Content kinds that change another message rather than being one (as the message recorder skips them). */
const NOT_MESSAGES = new Set(['reactionMessage', 'protocolMessage', 'pollUpdateMessage', 'editedMessage']);

/** A chat's stored time moved on to `at`, never back (the upsert's update of `whatsapp_chats`). */
function laterConversationTime(at: unknown) {
  return sql<number>`case when whatsapp_chats.conversation_timestamp is null or whatsapp_chats.conversation_timestamp < ${at} then ${at} else whatsapp_chats.conversation_timestamp end`;
}

/** Label ids in their order on the API: by number. */
function sortedLabels(ids: string[]): string[] {
  return ids.sort((a, b) => Number(a) - Number(b));
}

function escapeLike(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Unix seconds from a value WhatsApp gives in seconds or milliseconds. */
export function seconds(value: number): number {
  return Math.abs(value) > 100_000_000_000 ? Math.floor(value / 1000) : value;
}

export class WhatsAppStateStore {
  /** The statement of `touchChats`: every value from the rows (`excluded`), none in the SQL. */
  private readonly touchRows = new CompiledInsert<Insertable<WhatsAppChatsTable>>((db, rows) =>
    db
      .insertInto('whatsapp_chats')
      .values(rows)
      .onConflict((conflict) =>
        conflict.columns(['instance_id', 'jid']).doUpdateSet((eb) => ({
          conversation_timestamp: laterConversationTime(sql.ref('excluded.conversation_timestamp')),
          unread_count: sql<number>`whatsapp_chats.unread_count + excluded.unread_count`,
          deleted: eb.ref('excluded.deleted'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      ),
  );

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  // --- chats ---

  async patchChat(instanceId: string, jid: string, patch: ChatPatch): Promise<void> {
    await this.writeChat(this.db, instanceId, { jid, patch });
  }

  /**
   * Several chat writes, each as `patchChat` makes it, in transactions of up to
   * `CHAT_WRITES_PER_COMMIT`: a batch of events (a resume's offline messages, a history sync) was
   * one commit per write, two per message. Stable-sorted by address, so a chat's writes keep their
   * order and two batches on PostgreSQL lock rows in the same order.
   */
  async writeChats(instanceId: string, writes: ChatWrite[]): Promise<void> {
    if (writes.length === 1) return this.writeChat(this.db, instanceId, writes[0]!);
    const ordered = writes
      .map((write, at) => ({ write, at }))
      .sort((a, b) => (a.write.jid < b.write.jid ? -1 : a.write.jid > b.write.jid ? 1 : a.at - b.at));
    for (let start = 0; start < ordered.length; start += CHAT_WRITES_PER_COMMIT) {
      const part = ordered.slice(start, start + CHAT_WRITES_PER_COMMIT);
      await this.db.transaction().execute(async (trx) => {
        for (const { write } of part) await this.writeChat(trx, instanceId, write);
      });
    }
  }

  /**
   * New messages' chats, one statement per `CHAT_WRITES_PER_COMMIT` chats (its SQL built once per
   * row count); one touch per chat (PostgreSQL updates a row once per statement).
   */
  async touchChats(instanceId: string, touches: ChatTouch[]): Promise<void> {
    const updatedAt = this.clock.now();
    const rows = touches.map(({ jid, at, unread }) => ({
      instance_id: instanceId,
      jid,
      name: null,
      unread_count: unread,
      marked_unread: 0,
      pinned_at: null,
      archived: 0,
      muted_until: null,
      conversation_timestamp: at,
      cleared_before: null,
      deleted: 0,
      updated_at: updatedAt,
    }));
    for (let start = 0; start < rows.length; start += CHAT_WRITES_PER_COMMIT) {
      await this.touchRows.execute(this.db, rows.slice(start, start + CHAT_WRITES_PER_COMMIT));
    }
  }

  private async writeChat(db: Kysely<Database>, instanceId: string, { jid, patch }: ChatWrite): Promise<void> {
    const set: Partial<WhatsAppChatsTable> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.unreadCount !== undefined) set.unread_count = patch.unreadCount;
    if (patch.markedUnread !== undefined) set.marked_unread = patch.markedUnread ? 1 : 0;
    if (patch.pinnedAt !== undefined) set.pinned_at = patch.pinnedAt;
    if (patch.archived !== undefined) set.archived = patch.archived ? 1 : 0;
    if (patch.mutedUntil !== undefined) set.muted_until = patch.mutedUntil;
    if (patch.clearedBefore !== undefined) set.cleared_before = patch.clearedBefore;
    if (patch.deleted !== undefined) set.deleted = patch.deleted ? 1 : 0;
    const updatedAt = this.clock.now();
    const ts = patch.conversationTimestamp;
    await db
      .insertInto('whatsapp_chats')
      .values({
        instance_id: instanceId,
        jid,
        name: null,
        unread_count: 0,
        marked_unread: 0,
        pinned_at: null,
        archived: 0,
        muted_until: null,
        conversation_timestamp: ts ?? null,
        cleared_before: null,
        deleted: 0,
        ...set,
        updated_at: updatedAt,
      })
      .onConflict((conflict) =>
        conflict.columns(['instance_id', 'jid']).doUpdateSet({
          ...set,
          ...(ts !== undefined ? { conversation_timestamp: laterConversationTime(ts) } : {}),
          updated_at: updatedAt,
        }),
      )
      .execute();
  }

  /** Deleted on this account: hidden until a new message, which shows without the old ones. */
  async deleteChat(instanceId: string, jid: string, now: number): Promise<void> {
    const row = await this.chat(instanceId, jid);
    const clearedBefore = Math.max(Number(row?.conversation_timestamp ?? 0), Number(row?.cleared_before ?? 0), row ? 0 : now);
    await this.patchChat(instanceId, jid, { deleted: true, clearedBefore, unreadCount: 0, markedUnread: false, pinnedAt: null });
  }

  async chat(instanceId: string, jid: string): Promise<ChatRow | undefined> {
    return this.db
      .selectFrom('whatsapp_chats')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('jid', '=', jid)
      .where('deleted', '=', 0)
      .executeTakeFirst();
  }

  async pinnedCount(instanceId: string): Promise<number> {
    const row = await this.db
      .selectFrom('whatsapp_chats')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('instance_id', '=', instanceId)
      .where('deleted', '=', 0)
      .where('pinned_at', 'is not', null)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Chats matching the filter: pinned first (latest pin first), then by last activity. */
  async listChats(instanceId: string, filter: ChatFilter, page: PageRequest): Promise<{ rows: ListedChat[]; total: number }> {
    let query = this.db
      .selectFrom('whatsapp_chats as c')
      .leftJoin('whatsapp_contacts as p', (join) => join.onRef('p.instance_id', '=', 'c.instance_id').onRef('p.jid', '=', 'c.jid'))
      .where('c.instance_id', '=', instanceId)
      .where('c.deleted', '=', 0);
    switch (filter.kind) {
      case 'group':
        query = query.where('c.jid', 'like', '%@g.us');
        break;
      case 'newsletter':
        query = query.where('c.jid', 'like', '%@newsletter');
        break;
      case 'person':
        query = query.where('c.jid', 'not like', '%@g.us').where('c.jid', 'not like', '%@newsletter');
        break;
      case undefined:
        break;
    }
    if (filter.archived !== undefined) query = query.where('c.archived', '=', filter.archived ? 1 : 0);
    if (filter.pinned !== undefined) query = query.where('c.pinned_at', filter.pinned ? 'is not' : 'is', null);
    if (filter.unread !== undefined) {
      query = filter.unread
        ? query.where((eb) => eb.or([eb('c.unread_count', '>', 0), eb('c.marked_unread', '=', 1)]))
        : query.where('c.unread_count', '=', 0).where('c.marked_unread', '=', 0);
    }
    if (filter.labelId !== undefined) {
      const labelId = filter.labelId;
      query = query.where((eb) =>
        eb.exists(
          eb
            .selectFrom('whatsapp_label_links as l')
            .select('l.label_id')
            .whereRef('l.instance_id', '=', 'c.instance_id')
            .whereRef('l.chat_jid', '=', 'c.jid')
            .where('l.message_id', '=', '')
            .where('l.label_id', '=', labelId),
        ),
      );
    }
    if (filter.query !== undefined) {
      const pattern = escapeLike(filter.query);
      const like = (column: string) => sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
      query = query.where((eb) =>
        eb.or([
          like('c.jid'),
          like('c.name'),
          like('p.name'),
          like('p.notify'),
          eb.exists(
            eb
              .selectFrom('messages as m')
              .select('m.message_id')
              .whereRef('m.instance_id', '=', 'c.instance_id')
              .whereRef('m.remote_jid', '=', 'c.jid')
              // Poll votes are not messages of the chat; the condition lets this read messages_chat_newest.
              .where(sql<boolean>`m.${sql.raw(NOT_POLL_VOTE)}`)
              .where(sql<boolean>`(c.cleared_before is null or m.message_timestamp > c.cleared_before)`)
              .where(like('m.content')),
          ),
        ]),
      );
    }
    const count = query.select((eb) => eb.fn.countAll<number | string>().as('n'));
    // One statement: the page, its count, each chat's own labels and whether any of its messages
    // carry one (only then are message labels read).
    const labels = sql<string[] | string | null>`(${
      isPostgres(this.db) ? sql`select json_agg(l.label_id)` : sql`select json_group_array(l.label_id)`
    } from whatsapp_label_links l where l.instance_id = c.instance_id and l.chat_jid = c.jid and l.message_id = '')`;
    const labelledMessages = sql<
      boolean | number
    >`exists (select 1 from whatsapp_label_links l where l.instance_id = c.instance_id and l.chat_jid = c.jid and l.message_id <> '')`;
    const rows = await query
      .select(LISTED_CHAT_COLUMNS)
      .select(sql<string | null>`coalesce(p.name, p.notify, p.verified_name)`.as('contact_name'))
      .select([labels.as('labels'), labelledMessages.as('labelled_messages'), count.as('total')])
      // Spelled as whatsapp_chats_list_order (storage/expressions.ts): a page is read along it, not sorted.
      .orderBy(sql.raw(CHAT_LIST_ORDER[0]))
      .orderBy('c.pinned_at', 'desc')
      .orderBy(sql.raw(CHAT_LIST_ORDER[1]), 'desc')
      .orderBy('c.jid')
      .offset(page.offset)
      .limit(page.limit)
      .execute();
    const total = totalOf(rows, page) ?? Number((await count.executeTakeFirst())?.n ?? 0);
    // Set on the rows as read (a copy per row costs more than the statement saved).
    for (const row of rows) {
      const chatLabels = row.labels;
      (row as ListedChat).labels = sortedLabels(typeof chatLabels === 'string' ? (JSON.parse(chatLabels) as string[]) : (chatLabels ?? []));
      (row as ListedChat).labelled_messages = Boolean(row.labelled_messages);
    }
    return { rows: rows as unknown as ListedChat[], total };
  }

  // --- contacts ---

  async upsertContacts(instanceId: string, contacts: ContactPatch[]): Promise<void> {
    const updatedAt = this.clock.now();
    for (const contact of contacts) {
      const set: Partial<WhatsAppContactsTable> = {};
      if (contact.name !== undefined) set.name = contact.name;
      if (contact.notify !== undefined) set.notify = contact.notify;
      if (contact.verifiedName !== undefined) set.verified_name = contact.verifiedName;
      await this.db
        .insertInto('whatsapp_contacts')
        .values({ instance_id: instanceId, jid: contact.jid, name: null, notify: null, verified_name: null, ...set, updated_at: updatedAt })
        .onConflict((conflict) => conflict.columns(['instance_id', 'jid']).doUpdateSet({ ...set, updated_at: updatedAt }))
        .execute();
    }
  }

  async contact(instanceId: string, jid: string): Promise<ContactRow | undefined> {
    return this.db
      .selectFrom('whatsapp_contacts')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('jid', '=', jid)
      .executeTakeFirst();
  }

  /** People with a phone address, by name then number. */
  async listContacts(instanceId: string, page: PageRequest): Promise<{ rows: ContactRow[]; total: number }> {
    const query = this.db.selectFrom('whatsapp_contacts').where('instance_id', '=', instanceId).where('jid', 'like', '%@s.whatsapp.net');
    const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    const rows = await query
      .selectAll()
      .orderBy(sql`coalesce(name, notify, verified_name, jid)`)
      .orderBy('jid')
      .offset(page.offset)
      .limit(page.limit)
      .execute();
    return { rows, total: Number(counted?.n ?? 0) };
  }

  // --- labels ---

  async labels(instanceId: string): Promise<LabelRow[]> {
    const rows = await this.db.selectFrom('whatsapp_labels').selectAll().where('instance_id', '=', instanceId).execute();
    return rows.sort((a, b) => Number(a.label_id) - Number(b.label_id) || a.label_id.localeCompare(b.label_id));
  }

  async saveLabel(instanceId: string, label: { labelId: string; name: string; color: number }): Promise<void> {
    const updatedAt = this.clock.now();
    await this.db
      .insertInto('whatsapp_labels')
      .values({ instance_id: instanceId, label_id: label.labelId, name: label.name, color: label.color, updated_at: updatedAt })
      .onConflict((conflict) =>
        conflict.columns(['instance_id', 'label_id']).doUpdateSet({ name: label.name, color: label.color, updated_at: updatedAt }),
      )
      .execute();
  }

  async deleteLabel(instanceId: string, labelId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('whatsapp_label_links').where('instance_id', '=', instanceId).where('label_id', '=', labelId).execute();
      await trx.deleteFrom('whatsapp_labels').where('instance_id', '=', instanceId).where('label_id', '=', labelId).execute();
    });
  }

  /** Puts a label on (or off) a chat, or a message of it when `messageId` is given. */
  async linkLabel(instanceId: string, labelId: string, chatJid: string, messageId: string | undefined, on: boolean): Promise<void> {
    const row = { instance_id: instanceId, label_id: labelId, chat_jid: chatJid, message_id: messageId ?? '' };
    if (on) {
      await this.db
        .insertInto('whatsapp_label_links')
        .values(row)
        .onConflict((conflict) => conflict.doNothing())
        .execute();
    } else {
      await this.db
        .deleteFrom('whatsapp_label_links')
        .where('instance_id', '=', instanceId)
        .where('label_id', '=', labelId)
        .where('chat_jid', '=', chatJid)
        .where('message_id', '=', row.message_id)
        .execute();
    }
  }

  /** Label ids on a chat (`messageIds` absent) or on each of the given messages, keyed by message id ('' for the chat). */
  /**
   * `labelsOn` for several chats in one read: chat JID -> (message id or '' -> label ids), every
   * asked id present.
   */
  async labelsOnChats(
    instanceId: string,
    wanted: { chatJid: string; messageIds: string[] }[],
  ): Promise<Map<string, Map<string, string[]>>> {
    const out = new Map<string, Map<string, string[]>>(
      wanted.map(({ chatJid, messageIds }) => [chatJid, new Map(messageIds.map((id) => [id, []]))]),
    );
    const ids = [...new Set(wanted.flatMap((w) => w.messageIds))];
    if (ids.length === 0) return out;
    const rows = await this.db
      .selectFrom('whatsapp_label_links')
      .select(['chat_jid', 'label_id', 'message_id'])
      .where('instance_id', '=', instanceId)
      .where('chat_jid', 'in', [...out.keys()])
      .where('message_id', 'in', ids)
      .execute();
    for (const row of rows) out.get(row.chat_jid)?.get(row.message_id)?.push(row.label_id);
    for (const chat of out.values()) for (const labels of chat.values()) sortedLabels(labels);
    return out;
  }

  async labelsOn(instanceId: string, chatJid: string, messageIds: string[] = ['']): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(messageIds.map((id) => [id, []]));
    if (messageIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('whatsapp_label_links')
      .select(['label_id', 'message_id'])
      .where('instance_id', '=', instanceId)
      .where('chat_jid', '=', chatJid)
      .where('message_id', 'in', messageIds)
      .execute();
    for (const row of rows) out.get(row.message_id)?.push(row.label_id);
    for (const ids of out.values()) sortedLabels(ids);
    return out;
  }

  // --- calls ---

  async call(instanceId: string, callId: string): Promise<CallRow | undefined> {
    return this.db
      .selectFrom('whatsapp_calls')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('call_id', '=', callId)
      .executeTakeFirst();
  }

  async saveCall(row: CallRow): Promise<void> {
    const { instance_id: _i, call_id: _c, ...rest } = row;
    await this.db
      .insertInto('whatsapp_calls')
      .values(row)
      .onConflict((conflict) => conflict.columns(['instance_id', 'call_id']).doUpdateSet(rest))
      .execute();
  }

  async listCalls(instanceId: string, page: PageRequest): Promise<{ rows: CallRow[]; total: number }> {
    const query = this.db.selectFrom('whatsapp_calls').where('instance_id', '=', instanceId);
    const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    const rows = await query
      .selectAll()
      .orderBy('offered_at', 'desc')
      .orderBy('call_id', 'desc')
      .offset(page.offset)
      .limit(page.limit)
      .execute();
    return { rows, total: Number(counted?.n ?? 0) };
  }

  /** The account's chat state (after a logout the next phone may be another account). Calls stay. */
  async forgetAccount(instanceId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const table of ['whatsapp_chats', 'whatsapp_contacts', 'whatsapp_labels', 'whatsapp_label_links'] as const) {
        await trx.deleteFrom(table).where('instance_id', '=', instanceId).execute();
      }
    });
  }
}

/** Chat fields a Baileys chat (history, chats.upsert) or chat update carries. */
export function chatPatchOf(chat: ChatUpdate, absolute: boolean): ChatPatch {
  const patch: ChatPatch = {};
  if (typeof chat.name === 'string') patch.name = chat.name;
  if (chat.archived !== undefined && chat.archived !== null) patch.archived = chat.archived;
  // A history conversation is a decoded protobuf: a field the phone left out reads null. There
  // (absolute) null is no change; in an update it is the change (unpinned, unmuted).
  const given = (value: unknown) => value !== undefined && !(absolute && value === null);
  if (given(chat.pinned)) patch.pinnedAt = chat.pinned ? seconds(toSeconds(chat.pinned)) : null;
  if (given(chat.muteEndTime)) {
    const end = chat.muteEndTime === null ? 0 : toSeconds(chat.muteEndTime);
    patch.mutedUntil = end === 0 ? null : end < 0 ? -1 : seconds(end);
  }
  if (chat.markedAsUnread !== undefined && chat.markedAsUnread !== null) patch.markedUnread = chat.markedAsUnread;
  const ts = toSeconds(chat.conversationTimestamp);
  if (ts > 0) patch.conversationTimestamp = ts;
  const unread = chat.unreadCount;
  if (typeof unread === 'number') {
    if (absolute) patch.unreadCount = Math.max(0, unread);
    // Baileys' updates: 0 = read, -1 = marked unread; positive counts are increments for messages
    // this store already counts from messages.upsert.
    else if (unread === 0) {
      patch.unreadCount = 0;
      patch.markedUnread = false;
    } else if (unread < 0) patch.markedUnread = true;
  }
  return patch;
}

/** A conversation, not the status feed or a broadcast list. */
function isChat(jid: string | null | undefined): jid is string {
  return typeof jid === 'string' && jid.length > 0 && !jid.endsWith('@broadcast');
}

/**
 * Keeps the state from one batch of Baileys events. Runs before the batch's canonical events go
 * out, so an operation triggered by an event (auto-reject of a CALL) finds what it describes.
 */
export async function recordState(
  store: WhatsAppStateStore,
  messages: ChatMessageSource,
  instanceId: string,
  events: Partial<BaileysEventMap>,
  addresses: LidDirectory,
  nowMs: number,
): Promise<void> {
  const jidOf = (jid: string) => addresses.resolve(jid).jid;
  const history = events['messaging-history.set'];
  // Chat ids (the session's prefetch covers message keys, contacts and calls).
  await addresses.prefetch([...(events['chats.upsert'] ?? []), ...(events['chats.update'] ?? [])].map((c) => c.id));
  // New messages' chats: one touch per chat, written after the rest (`touchChats`).
  const touches = new Map<string, ChatTouch>();
  const upsert = events['messages.upsert'];
  for (const message of upsert?.messages ?? []) {
    if (!isUserMessage(message) || !isChat(message.key.remoteJid)) continue;
    const jid = addresses.resolve(message.key.remoteJid, message.key.remoteJidAlt).jid;
    const unread =
      upsert?.type === 'notify' &&
      !message.key.fromMe &&
      !NOT_MESSAGES.has(messageTypeOf((message.message ?? {}) as Record<string, unknown>))
        ? 1
        : 0;
    const at = toSeconds(message.messageTimestamp) || Math.floor(nowMs / 1000);
    const touch = touches.get(jid);
    if (touch) {
      touch.at = Math.max(touch.at, at);
      touch.unread += unread;
    } else touches.set(jid, { jid, at, unread });
  }
  const deletes = events['chats.delete'] ?? [];
  // The batch's other chat writes go in few commits (`writeChats`), in the order the events give
  // them. Baileys updates a chat's time beside each new message: that update only moves the time
  // on, so the message's touch carries it (unless a delete in between reads the time).
  const chatWrites: ChatWrite[] = [];
  for (const chat of [...(history?.chats ?? []), ...(events['chats.upsert'] ?? [])]) {
    if (isChat(chat.id)) chatWrites.push({ jid: jidOf(chat.id), patch: chatPatchOf(chat, true) });
  }
  for (const chat of events['chats.update'] ?? []) {
    if (!isChat(chat.id)) continue;
    const write = { jid: jidOf(chat.id), patch: chatPatchOf(chat, false) };
    const touch = touches.get(write.jid);
    const { conversationTimestamp, ...rest } = write.patch;
    if (touch && deletes.length === 0 && conversationTimestamp !== undefined && Object.keys(rest).length === 0)
      touch.at = Math.max(touch.at, conversationTimestamp);
    else chatWrites.push(write);
  }
  // A delete reads the chat's row: what came before it is written first.
  if (deletes.length > 0) await store.writeChats(instanceId, chatWrites.splice(0));
  for (const deleted of deletes) await store.deleteChat(instanceId, jidOf(deleted), Math.floor(nowMs / 1000));
  for (const group of [...(events['groups.upsert'] ?? []), ...(events['groups.update'] ?? [])]) {
    if (group.id && typeof group.subject === 'string') chatWrites.push({ jid: group.id, patch: { name: group.subject } });
  }
  await store.writeChats(instanceId, chatWrites.splice(0));

  // History messages join the message store (MESSAGE events fill it for live ones), in the
  // store's batched writes: all saves of the chunk are started before any is awaited.
  const saves: Promise<void>[] = [];
  for (const message of history?.messages ?? []) {
    if (!isUserMessage(message)) continue;
    const data = messageData(message, addresses) as {
      key: { remoteJid: string; fromMe: boolean; id: string; participant?: string };
      pushName: string;
      message: Record<string, unknown>;
      messageTimestamp: number;
    };
    const messageType = messageTypeOf(data.message);
    if (NOT_MESSAGES.has(messageType) || !data.key.id) continue;
    saves.push(
      messages.save({
        instanceId,
        key: { remoteJid: data.key.remoteJid, fromMe: data.key.fromMe, id: data.key.id },
        ...(data.key.participant ? { participant: data.key.participant } : {}),
        ...(data.pushName ? { pushName: data.pushName } : {}),
        messageType,
        message: data.message,
        messageTimestamp: data.messageTimestamp,
        createdAt: nowMs,
      }),
    );
  }
  await Promise.all(saves);
  await store.touchChats(instanceId, [...touches.values()]);

  const contacts = [...(history?.contacts ?? []), ...(events['contacts.upsert'] ?? []), ...(events['contacts.update'] ?? [])];
  const patches: ContactPatch[] = [];
  for (const contact of contacts) {
    if (!contact.id) continue;
    const patch: ContactPatch = { jid: addresses.resolve(contact.id, contact.phoneNumber ?? contact.lid).jid };
    if (contact.name !== undefined) patch.name = contact.name ?? null;
    if (contact.notify !== undefined) patch.notify = contact.notify ?? null;
    if (contact.verifiedName !== undefined) patch.verifiedName = contact.verifiedName ?? null;
    patches.push(patch);
  }
  if (patches.length > 0) await store.upsertContacts(instanceId, patches);

  const label = events['labels.edit'];
  if (label) {
    if (label.deleted) await store.deleteLabel(instanceId, label.id);
    else await store.saveLabel(instanceId, { labelId: label.id, name: label.name, color: label.color });
  }
  const association = events['labels.association'];
  if (association) {
    const { association: link, type } = association;
    const messageId = 'messageId' in link ? (link as { messageId: string }).messageId : undefined;
    await store.linkLabel(instanceId, link.labelId, jidOf(link.chatId), messageId, type === 'add');
  }

  for (const call of events.call ?? []) await recordCall(store, instanceId, call);
}

/** A call state change in the call log (incoming calls: WhatsApp tells linked devices of those). */
async function recordCall(store: WhatsAppStateStore, instanceId: string, call: WACallEvent): Promise<void> {
  const at = Math.floor(call.date.getTime() / 1000);
  const existing = await store.call(instanceId, call.id);
  switch (call.status) {
    case 'offer':
    case 'ringing':
      if (existing) return;
      await store.saveCall({
        instance_id: instanceId,
        call_id: call.id,
        from_jid: call.from,
        is_video: call.isVideo ? 1 : 0,
        is_group: call.isGroup ? 1 : 0,
        status: 'ringing',
        rejected_by: null,
        offered_at: at,
        ended_at: null,
      });
      return;
    case 'reject':
      // Rejected on another device of this account (or by the caller's side): by the user.
      if (existing?.status === 'ringing') await store.saveCall({ ...existing, status: 'rejected', rejected_by: 'user', ended_at: at });
      return;
    case 'timeout':
      if (existing?.status === 'ringing') await store.saveCall({ ...existing, status: 'missed', ended_at: at });
      return;
    case 'accept':
      // Answered on the phone: shown as ended, without an end time until it terminates.
      if (existing?.status === 'ringing') await store.saveCall({ ...existing, status: 'ended' });
      return;
    case 'terminate':
      if (existing && (existing.status === 'ringing' || (existing.status === 'ended' && existing.ended_at === null))) {
        await store.saveCall({ ...existing, status: 'ended', ended_at: at });
      }
      return;
    case 'preaccept':
    case 'transport':
    case 'relaylatency':
      return;
  }
}

/** Whether the linked phone is a WhatsApp Business app (labels, business profile). */
export function isBusinessAccount(platform: string | undefined): boolean {
  return isWABusinessPlatform(platform ?? '');
}
