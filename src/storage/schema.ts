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
  /** 1 when the admin key set webhook_url (deliveries may then reach private addresses). */
  webhook_admin_set: Generated<number>;
  /** JSON object of per-instance settings. */
  settings: string;
  proxy_url: string | null;
  /** JSON `{ maxEvents, maxWaitMs }` of the batched webhook, or null (one POST per event). */
  webhook_batch: Generated<string | null>;
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

/** The last `seq` given to an event of each instance (the envelope's per-instance sequence number). */
export interface EventSequencesTable {
  instance_id: string;
  seq: number;
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

/** A chat of a WhatsApp instance, kept from Baileys' chat and message events (times in Unix seconds). */
export interface WhatsAppChatsTable {
  instance_id: string;
  /** The chat's address as events show it (the phone JID when known, else the LID; groups, newsletters). */
  jid: string;
  name: string | null;
  unread_count: number;
  marked_unread: number;
  pinned_at: number | null;
  archived: number;
  /** -1 muted for ever; null not muted. */
  muted_until: number | null;
  conversation_timestamp: number | null;
  /** Messages at or before this time were cleared (clear or delete); history hides them. */
  cleared_before: number | null;
  /** 1 after a delete, until a new message brings the chat back. */
  deleted: number;
  updated_at: number;
}

export interface WhatsAppContactsTable {
  instance_id: string;
  jid: string;
  /** The name this account saved. */
  name: string | null;
  /** The name the person set (push name). */
  notify: string | null;
  verified_name: string | null;
  updated_at: number;
}

export interface WhatsAppLabelsTable {
  instance_id: string;
  label_id: string;
  name: string;
  color: number;
  updated_at: number;
}

export interface WhatsAppLabelLinksTable {
  instance_id: string;
  label_id: string;
  chat_jid: string;
  /** '' for the chat itself. */
  message_id: string;
}

export interface WhatsAppCallsTable {
  instance_id: string;
  call_id: string;
  from_jid: string;
  is_video: number;
  is_group: number;
  /** ringing | rejected | missed | ended */
  status: string;
  rejected_by: string | null;
  offered_at: number;
  ended_at: number | null;
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
  // body_text (0020): the content's text or caption, computed by the database (storage/expressions.ts);
  // never written, read only by the text search, so not declared here.
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

/** integrations/chatwoot: one row per instance linked to a Chatwoot inbox. */
export interface ChatwootConfigsTable {
  instance_id: string;
  base_url: string;
  account_id: number;
  api_token: string;
  inbox_id: number;
  inbox_name: string;
  webhook_secret: string;
  signing_secret: string | null;
  waygate_url: string | null;
  /** JSON: ChatwootOptions. */
  options: string;
  created_at: number;
  updated_at: number;
}

/** A WhatsApp chat and the Chatwoot contact, contact inbox (source_id) and conversation it maps to. */
export interface ChatwootChatsTable {
  instance_id: string;
  chat_jid: string;
  contact_id: number;
  source_id: string;
  conversation_id: number | null;
  updated_at: number;
}

/** WhatsApp message id <-> Chatwoot message id, for both directions (dedupe and echo suppression). */
export interface ChatwootMessagesTable {
  id: Generated<number>;
  instance_id: string;
  chat_jid: string;
  /** A WhatsApp message id, or `cw:<id>` for the claim of an agent message. */
  wa_message_id: string;
  cw_message_id: number | null;
  created_at: number;
}

// admin/failover: failover groups, their members in priority order, and their tokens (SHA-256 only).
export interface FailoverGroupsTable {
  id: string;
  name: string;
  /** priority | round-robin | least-loaded */
  policy: string;
  min_health: number;
  /** 1: a recipient keeps the member that last served it while that member is eligible. */
  sticky: number;
  webhook_url: string | null;
  webhook_secret: string;
  created_at: number;
  updated_at: number;
}

export interface FailoverGroupMembersTable {
  group_id: string;
  instance_id: string;
  /** 0 is tried first (the priority order). */
  position: number;
}

export interface FailoverGroupTokensTable {
  hash: string;
  group_id: string;
  /** null for the primary token; a rotated token's end of grace. */
  valid_until: number | null;
  created_at: number;
}

/** Which member last served a recipient of a sticky group. */
export interface FailoverStickyTable {
  group_id: string;
  recipient: string;
  instance_id: string;
  updated_at: number;
}

// admin/: alerts and backfill

export interface AlertRulesTable {
  id: string;
  name: string;
  /** instance_disconnected | health_below | dead_letters_above | channel_down | outbox_backlog_above */
  kind: string;
  threshold: number;
  for_ms: number;
  /** all | instance */
  scope: string;
  scope_id: string | null;
  channel: string | null;
  webhook_url: string;
  secret: string;
  muted_until: number | null;
  created_at: number;
  updated_at: number;
  /** 1 when the admin key itself created the rule: its notices may reach private addresses. */
  webhook_admin_set: Generated<number>;
}

/** A rule's condition seen true for a subject (`instance:<id>`, `channel:<name>`) since `since`. */
export interface AlertConditionsTable {
  rule_id: string;
  subject: string;
  since: number;
}

export interface AlertsTable {
  id: string;
  rule_id: string;
  subject: string;
  instance_id: string | null;
  channel: string | null;
  /** open | resolved */
  status: string;
  value: number | null;
  message: string;
  /** 1 once the fired notice is queued (0 while the rule was muted). */
  notified: number;
  fired_at: number;
  resolved_at: number | null;
  acknowledged_at: number | null;
}

export interface AlertNoticesTable {
  id: string;
  alert_id: string;
  /** fired | resolved */
  kind: string;
  body: string;
  /** pending | delivered | failed */
  status: string;
  attempts: number;
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

/** Delivered events moved out of the outbox, kept EVENT_ARCHIVE_DAYS for backfills. */
export interface EventArchiveTable {
  seq: number;
  event_id: string;
  instance_id: string;
  event_type: string;
  body: string;
  created_at: number;
}

export interface BackfillJobsTable {
  id: string;
  instance_id: string;
  target: string;
  /** `since` and `until` as given (ISO time or eventId). */
  since_text: string;
  until_text: string | null;
  /** Inclusive bounds on the event sequence (an eventId given as since/until). */
  from_seq: number;
  to_seq: number;
  since_at: number | null;
  until_at: number | null;
  /** JSON array of event types, or null for all. */
  event_types: string | null;
  rate_per_second: number;
  /** queued | running | completed | cancelled | failed */
  status: string;
  /** Sequence of the last event handled; the job resumes after it. */
  cursor_seq: number;
  total: number;
  delivered: number;
  last_event_id: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

/** auth/: a user of the web interface. */
export interface AuthUsersTable {
  id: string;
  /** Lowercased. */
  email: string;
  name: string;
  /** `scrypt$N$r$p$salt$hash` (base64url parts). */
  password_hash: string;
  /** owner | operator | viewer */
  role: string;
  session_version: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** auth/: a refresh token (SHA-256 only); one family per sign-in, each refresh replaces the token. */
export interface AuthRefreshTokensTable {
  hash: string;
  user_id: string;
  family: string;
  expires_at: number;
  /** Set when the token was exchanged; a second use revokes the family. */
  used_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

/** auth/: an invitation code (SHA-256 only) that lets one person register with a role. */
export interface AuthInvitationsTable {
  id: string;
  code_hash: string;
  role: string;
  created_by: string;
  expires_at: number;
  used_at: number | null;
  used_by: string | null;
  created_at: number;
}

export interface Database {
  instances: InstancesTable;
  instance_tokens: InstanceTokensTable;
  outbox: OutboxTable;
  event_sequences: EventSequencesTable;
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
  whatsapp_chats: WhatsAppChatsTable;
  whatsapp_contacts: WhatsAppContactsTable;
  whatsapp_labels: WhatsAppLabelsTable;
  whatsapp_label_links: WhatsAppLabelLinksTable;
  whatsapp_calls: WhatsAppCallsTable;
  chatwoot_configs: ChatwootConfigsTable;
  chatwoot_chats: ChatwootChatsTable;
  chatwoot_messages: ChatwootMessagesTable;
  failover_groups: FailoverGroupsTable;
  failover_group_members: FailoverGroupMembersTable;
  failover_group_tokens: FailoverGroupTokensTable;
  failover_sticky: FailoverStickyTable;
  alert_rules: AlertRulesTable;
  alert_conditions: AlertConditionsTable;
  alerts: AlertsTable;
  alert_notices: AlertNoticesTable;
  event_archive: EventArchiveTable;
  backfill_jobs: BackfillJobsTable;
  auth_users: AuthUsersTable;
  auth_refresh_tokens: AuthRefreshTokensTable;
  auth_invitations: AuthInvitationsTable;
  cluster_nodes: ClusterNodesTable;
  instance_leases: InstanceLeasesTable;
}

/** A gateway process of a cluster (src/cluster/): where peers reach it and when it last spoke (database ms). */
export interface ClusterNodesTable {
  node_id: string;
  address: string;
  started_at: number;
  heartbeat_at: number;
  /** Set while it stops: it takes no more instances and hands its own over. */
  draining: boolean;
  /** Holds the deployment's lock: admin routes and deployment-wide jobs run there. */
  leader: boolean;
}

/** Which process holds an instance's live session; `owner` null while handed over. */
export interface InstanceLeasesTable {
  instance_id: string;
  owner: string | null;
  epoch: number;
  expires_at: number;
}

export type InstanceRow = Selectable<InstancesTable>;
export type NewInstanceRow = Insertable<InstancesTable>;
export type InstanceUpdate = Updateable<InstancesTable>;
export type OutboxRow = Selectable<OutboxTable>;
export type DeadLetterRow = Selectable<DeadLettersTable>;
