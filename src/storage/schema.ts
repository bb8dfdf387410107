/** Table types for Kysely. Timestamps are integer milliseconds since the epoch; JSON is stored as text. */
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface InstancesTable {
  id: string;
  name: string;
  network: string;
  status: string;
  number: string | null;
  webhook_url: string | null;
  webhook_secret: string;
  /** JSON: "ALL" or an array of event types. */
  webhook_events: string;
  /** JSON object of per-instance settings. */
  settings: string;
  proxy_url: string | null;
  created_at: number;
  updated_at: number;
}

export interface InstanceTokensTable {
  /** Lowercase hex SHA-256 of the token; the plain token is never stored. */
  hash: string;
  instance_id: string;
  /** null while the token is primary; set when rotation turns it into a grace token. */
  valid_until: number | null;
  created_at: number;
}

export interface OutboxTable {
  seq: Generated<number>;
  event_id: string;
  instance_id: string;
  event_type: string;
  /** The exact JSON envelope every sink sends. */
  body: string;
  created_at: number;
}

export interface OutboxPendingTable {
  seq: number;
  sink: string;
  instance_id: string;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  last_status: number | null;
}

export interface DeadLettersTable {
  id: string;
  instance_id: string;
  sink: string;
  event_id: string;
  event_type: string;
  body: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  first_attempt_at: number;
  last_attempt_at: number;
  created_at: number;
}

export interface SandboxAccountsTable {
  /** Digits only, with country code. */
  number: string;
  push_name: string;
  created_at: number;
}

/** One document of the sandbox world: kind `account`, `group`, `community`, `newsletter`, `chats`, `calls`. */
export interface SandboxWorldTable {
  kind: string;
  id: string;
  /** JSON of the document. */
  body: string;
  updated_at: number;
}

/** Baileys' AuthenticationCreds of a WhatsApp instance, as BufferJSON text. */
export interface WhatsAppAuthCredsTable {
  instance_id: string;
  creds: string;
  updated_at: number;
}

/** One Signal key (SignalKeyStore entry) of a WhatsApp instance: `type` is Baileys' key type. */
export interface WhatsAppAuthKeysTable {
  instance_id: string;
  type: string;
  key_id: string;
  /** BufferJSON text of the key. */
  value: string;
}

/** A hidden WhatsApp id (LID) and the phone number it stands for, both as the user part only. */
export interface WhatsAppLidMappingsTable {
  instance_id: string;
  lid: string;
  pn: string;
  updated_at: number;
}

/** A message this instance sent or received, as the message store keeps it. */
export interface MessagesTable {
  instance_id: string;
  message_id: string;
  remote_jid: string;
  /** 1 when the instance sent it. */
  from_me: number;
  participant: string | null;
  push_name: string | null;
  /** The content's kind, e.g. `conversation`, `imageMessage`. */
  message_type: string;
  /** JSON of the content in the network payload shape. */
  content: string;
  /** Unix seconds. */
  message_timestamp: number;
  /** Key of the media bytes in the media store, when the message has media. */
  media_key: string | null;
  media_mimetype: string | null;
  media_size: number | null;
  media_file_name: string | null;
  media_sha256: string | null;
  created_at: number;
}

/** A /send/batch/text job: its items are sent one by one, paced, and survive a restart. */
export interface SendBatchesTable {
  id: string;
  instance_id: string;
  /** queued | running | completed | cancelled */
  status: string;
  total: number;
  interval_ms: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface SendBatchItemsTable {
  batch_id: string;
  position: number;
  number: string;
  /** JSON: the text message fields of the item. */
  payload: string;
  /** pending | sending | sent | failed | cancelled */
  status: string;
  message_id: string | null;
  error: string | null;
  sent_at: number | null;
}

export interface Database {
  instances: InstancesTable;
  instance_tokens: InstanceTokensTable;
  outbox: OutboxTable;
  outbox_pending: OutboxPendingTable;
  dead_letters: DeadLettersTable;
  sandbox_accounts: SandboxAccountsTable;
  messages: MessagesTable;
  send_batches: SendBatchesTable;
  send_batch_items: SendBatchItemsTable;
  sandbox_world: SandboxWorldTable;
  whatsapp_auth_creds: WhatsAppAuthCredsTable;
  whatsapp_auth_keys: WhatsAppAuthKeysTable;
  whatsapp_lid_mappings: WhatsAppLidMappingsTable;
}

export type InstanceRow = Selectable<InstancesTable>;
export type NewInstanceRow = Insertable<InstancesTable>;
export type InstanceUpdate = Updateable<InstancesTable>;
export type OutboxRow = Selectable<OutboxTable>;
export type DeadLetterRow = Selectable<DeadLettersTable>;
