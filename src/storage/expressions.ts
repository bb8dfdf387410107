/**
 * SQL expressions that indexes are built on (migrations.ts) and that queries must spell the same
 * way, or the database will not use the index. A migration is never edited once released: changing
 * one of these needs a new migration that rebuilds what uses it.
 */
import { sql, type RawBuilder } from 'kysely';
import type { Dialect } from './db.js';

/** `message_type` of a decrypted poll vote: kept for GET /message/poll-results, never listed as a message. */
export const POLL_VOTE_TYPE = 'pollVote';

/**
 * The condition of every message listing, spelled with the literal: the message read indexes are
 * partial on it (a bound parameter would not let SQLite use them).
 */
export const NOT_POLL_VOTE = `message_type <> '${POLL_VOTE_TYPE}'`;

/** Where a message's readable text sits: text, extended text, or a media caption (the first found). */
const TEXT_PATHS = [
  ['conversation'],
  ['extendedTextMessage', 'text'],
  ['imageMessage', 'caption'],
  ['videoMessage', 'caption'],
  ['documentMessage', 'caption'],
];

/**
 * The text or caption of `messages.content` (JSON text), in the dialect's JSON functions: the column
 * `body_text`. PostgreSQL's jsonb refuses the escape of a NUL character (`\u0000`), which
 * JSON.stringify writes for one: such a message gets no text there (it is stored, and not found by
 * text) rather than failing its write; before 0020 it made every text search of its instance fail.
 */
export function messageText(dialect: Dialect): RawBuilder<string | null> {
  const parts = TEXT_PATHS.map((path) =>
    dialect === 'postgres'
      ? sql.raw(`(content::jsonb #>> '{${path.join(',')}}')`)
      : sql.raw(`json_extract(content, '$.${path.join('.')}')`),
  );
  const text = sql<string | null>`coalesce(${sql.join(parts)})`;
  return dialect === 'postgres'
    ? sql<string | null>`case when strpos(content, ${sql.raw(String.raw`E'\\u0000'`)}) > 0 then null else ${text} end`
    : text;
}

/**
 * GET /chat/list's order after `instance_id, deleted`: pinned chats first (latest pin first, the
 * `pinned_at desc` between these two), then by last activity, then by JID.
 */
export const CHAT_LIST_ORDER = ['case when pinned_at is null then 1 else 0 end', 'coalesce(conversation_timestamp, 0)'] as const;
