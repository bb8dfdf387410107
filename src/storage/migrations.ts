/** One migration set, applied at start on SQLite and PostgreSQL alike. */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Dialect } from './db.js';
import { CHAT_LIST_ORDER, messageText, NOT_POLL_VOTE } from './expressions.js';

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
          .addColumn('seq', sql.raw(serial), (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
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
        await db.schema.createIndex('outbox_pending_sink').on('outbox_pending').columns(['sink', 'instance_id', 'seq']).execute();
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
        await db.schema.createIndex('dead_letters_instance').on('dead_letters').columns(['instance_id', 'created_at']).execute();
        await db.schema
          .createTable('sandbox_accounts')
          .addColumn('number', 'text', (c) => c.primaryKey())
          .addColumn('push_name', 'text', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
      },
    },
    '0003_messages': {
      // The message store (quotes, forwards, media downloads) and the durable /send/batch/text queue.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('messages')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('message_id', 'text', (c) => c.notNull())
          .addColumn('remote_jid', 'text', (c) => c.notNull())
          .addColumn('from_me', 'integer', (c) => c.notNull())
          .addColumn('participant', 'text')
          .addColumn('push_name', 'text')
          .addColumn('message_type', 'text', (c) => c.notNull())
          .addColumn('content', 'text', (c) => c.notNull())
          .addColumn('message_timestamp', sql.raw(big), (c) => c.notNull())
          .addColumn('media_key', 'text')
          .addColumn('media_mimetype', 'text')
          .addColumn('media_size', sql.raw(big))
          .addColumn('media_file_name', 'text')
          .addColumn('media_sha256', 'text')
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('messages_pk', ['instance_id', 'message_id'])
          .execute();
        await db.schema.createIndex('messages_created').on('messages').columns(['created_at']).execute();
        await db.schema
          .createTable('send_batches')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('total', 'integer', (c) => c.notNull())
          .addColumn('interval_ms', 'integer', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('started_at', sql.raw(big))
          .addColumn('finished_at', sql.raw(big))
          .execute();
        await db.schema.createIndex('send_batches_instance').on('send_batches').columns(['instance_id', 'created_at']).execute();
        await db.schema.createIndex('send_batches_status').on('send_batches').columns(['status']).execute();
        await db.schema
          .createTable('send_batch_items')
          .addColumn('batch_id', 'text', (c) => c.notNull().references('send_batches.id').onDelete('cascade'))
          .addColumn('position', 'integer', (c) => c.notNull())
          .addColumn('number', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('message_id', 'text')
          .addColumn('error', 'text')
          .addColumn('sent_at', sql.raw(big))
          .addPrimaryKeyConstraint('send_batch_items_pk', ['batch_id', 'position'])
          .execute();
      },
    },
    '0004_whatsapp_auth': {
      // The WhatsApp driver's linked-device state: Baileys' creds and Signal keys per instance, and
      // the LID <-> phone-number mapping it learns. Deleting an instance deletes all of it.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('whatsapp_auth_creds')
          .addColumn('instance_id', 'text', (c) => c.primaryKey().references('instances.id').onDelete('cascade'))
          .addColumn('creds', 'text', (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('whatsapp_auth_keys')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('value', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('whatsapp_auth_keys_pk', ['instance_id', 'type', 'key_id'])
          .execute();
        await db.schema
          .createTable('whatsapp_lid_mappings')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('lid', 'text', (c) => c.notNull())
          .addColumn('pn', 'text', (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('whatsapp_lid_mappings_pk', ['instance_id', 'lid'])
          .execute();
        await db.schema.createIndex('whatsapp_lid_mappings_pn').on('whatsapp_lid_mappings').columns(['instance_id', 'pn']).execute();
      },
    },
    '0005_sandbox_world': {
      // The simulated network's shared state (accounts, groups, communities, newsletters, chat
      // settings, call logs) as JSON documents, so what users build in the sandbox survives a restart.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('sandbox_world')
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('id', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('sandbox_world_pk', ['kind', 'id'])
          .execute();
      },
    },
    '0007_whatsapp_chats': {
      // What WhatsApp does not serve on demand, kept from the WhatsApp driver's events: chats (with
      // their pin/archive/mute/unread state), contacts, business labels and their chats/messages,
      // and the call log. Messages themselves live in `messages` (0003).
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('whatsapp_chats')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('jid', 'text', (c) => c.notNull())
          .addColumn('name', 'text')
          .addColumn('unread_count', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('marked_unread', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('pinned_at', sql.raw(big))
          .addColumn('archived', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('muted_until', sql.raw(big))
          .addColumn('conversation_timestamp', sql.raw(big))
          .addColumn('cleared_before', sql.raw(big))
          .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('whatsapp_chats_pk', ['instance_id', 'jid'])
          .execute();
        await db.schema
          .createTable('whatsapp_contacts')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('jid', 'text', (c) => c.notNull())
          .addColumn('name', 'text')
          .addColumn('notify', 'text')
          .addColumn('verified_name', 'text')
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('whatsapp_contacts_pk', ['instance_id', 'jid'])
          .execute();
        await db.schema
          .createTable('whatsapp_labels')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('label_id', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('color', 'integer', (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('whatsapp_labels_pk', ['instance_id', 'label_id'])
          .execute();
        await db.schema
          .createTable('whatsapp_label_links')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('label_id', 'text', (c) => c.notNull())
          .addColumn('chat_jid', 'text', (c) => c.notNull())
          // '' for the chat itself, else the id of the labelled message.
          .addColumn('message_id', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('whatsapp_label_links_pk', ['instance_id', 'chat_jid', 'message_id', 'label_id'])
          .execute();
        await db.schema
          .createTable('whatsapp_calls')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('call_id', 'text', (c) => c.notNull())
          .addColumn('from_jid', 'text', (c) => c.notNull())
          .addColumn('is_video', 'integer', (c) => c.notNull())
          .addColumn('is_group', 'integer', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('rejected_by', 'text')
          .addColumn('offered_at', sql.raw(big), (c) => c.notNull())
          .addColumn('ended_at', sql.raw(big))
          .addPrimaryKeyConstraint('whatsapp_calls_pk', ['instance_id', 'call_id'])
          .execute();
        await db.schema.createIndex('whatsapp_calls_offered').on('whatsapp_calls').columns(['instance_id', 'offered_at']).execute();
        // History pages read one chat's messages by time.
        await db.schema
          .createIndex('messages_instance_chat_time')
          .on('messages')
          .columns(['instance_id', 'remote_jid', 'message_timestamp'])
          .execute();
      },
    },
    // integrations/chatwoot: per-instance settings, WhatsApp chat <-> Chatwoot contact/conversation, message ids both ways.
    '0010_chatwoot': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('chatwoot_configs')
          .addColumn('instance_id', 'text', (c) => c.primaryKey().references('instances.id').onDelete('cascade'))
          .addColumn('base_url', 'text', (c) => c.notNull())
          .addColumn('account_id', 'integer', (c) => c.notNull())
          .addColumn('api_token', 'text', (c) => c.notNull())
          .addColumn('inbox_id', 'integer', (c) => c.notNull())
          .addColumn('inbox_name', 'text', (c) => c.notNull())
          // The unguessable part of the webhook URL Chatwoot calls.
          .addColumn('webhook_secret', 'text', (c) => c.notNull())
          .addColumn('signing_secret', 'text')
          .addColumn('waygate_url', 'text')
          // JSON: the behaviour switches and the ignore list.
          .addColumn('options', 'text', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('chatwoot_chats')
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('chat_jid', 'text', (c) => c.notNull())
          .addColumn('contact_id', sql.raw(big), (c) => c.notNull())
          .addColumn('source_id', 'text', (c) => c.notNull())
          .addColumn('conversation_id', sql.raw(big))
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('chatwoot_chats_pk', ['instance_id', 'chat_jid'])
          .execute();
        await db.schema
          .createIndex('chatwoot_chats_conversation')
          .on('chatwoot_chats')
          .columns(['instance_id', 'conversation_id'])
          .execute();
        await db.schema
          .createTable('chatwoot_messages')
          .addColumn('id', sql.raw(serial), (c) => c.primaryKey())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('chat_jid', 'text', (c) => c.notNull())
          // Unique: a WhatsApp message is posted once. An agent message is claimed as `cw:<id>` before it
          // is sent (a redelivered webhook finds the claim), then its WhatsApp ids are added.
          .addColumn('wa_message_id', 'text', (c) => c.notNull())
          // Null while a WhatsApp message is on its way to Chatwoot (a retry then looks for it there first).
          .addColumn('cw_message_id', sql.raw(big))
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('chatwoot_messages_wa')
          .unique()
          .on('chatwoot_messages')
          .columns(['instance_id', 'wa_message_id'])
          .execute();
        await db.schema.createIndex('chatwoot_messages_cw').on('chatwoot_messages').columns(['instance_id', 'cw_message_id']).execute();
      },
    },
    // admin/failover: failover groups (src/admin/failover/repo.ts).
    '0011_admin_failover': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('failover_groups')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull().unique())
          .addColumn('policy', 'text', (c) => c.notNull())
          .addColumn('min_health', 'integer', (c) => c.notNull())
          .addColumn('sticky', 'integer', (c) => c.notNull())
          .addColumn('webhook_url', 'text')
          .addColumn('webhook_secret', 'text', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('failover_group_members')
          .addColumn('group_id', 'text', (c) => c.notNull().references('failover_groups.id').onDelete('cascade'))
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('position', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('failover_group_members_pk', ['group_id', 'instance_id'])
          .execute();
        await db.schema.createIndex('failover_group_members_instance').on('failover_group_members').column('instance_id').execute();
        await db.schema
          .createTable('failover_group_tokens')
          .addColumn('hash', 'text', (c) => c.primaryKey())
          .addColumn('group_id', 'text', (c) => c.notNull().references('failover_groups.id').onDelete('cascade'))
          .addColumn('valid_until', sql.raw(big))
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.createIndex('failover_group_tokens_group').on('failover_group_tokens').column('group_id').execute();
        await db.schema
          .createTable('failover_sticky')
          .addColumn('group_id', 'text', (c) => c.notNull().references('failover_groups.id').onDelete('cascade'))
          .addColumn('recipient', 'text', (c) => c.notNull())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('failover_sticky_pk', ['group_id', 'recipient'])
          .execute();
        await db.schema.createIndex('failover_sticky_time').on('failover_sticky').column('updated_at').execute();
      },
    },
    // admin/: alerts (rules, the conditions being watched, alerts, their signed notices).
    '0012_admin_alerts': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('alert_rules')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('threshold', 'integer', (c) => c.notNull())
          .addColumn('for_ms', sql.raw(big), (c) => c.notNull())
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('scope_id', 'text')
          .addColumn('channel', 'text')
          .addColumn('webhook_url', 'text', (c) => c.notNull())
          .addColumn('secret', 'text', (c) => c.notNull())
          .addColumn('muted_until', sql.raw(big))
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('alert_conditions')
          .addColumn('rule_id', 'text', (c) => c.notNull().references('alert_rules.id').onDelete('cascade'))
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('since', sql.raw(big), (c) => c.notNull())
          .addPrimaryKeyConstraint('alert_conditions_pk', ['rule_id', 'subject'])
          .execute();
        await db.schema
          .createTable('alerts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('rule_id', 'text', (c) => c.notNull().references('alert_rules.id').onDelete('cascade'))
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('instance_id', 'text')
          .addColumn('channel', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('value', 'integer')
          .addColumn('message', 'text', (c) => c.notNull())
          .addColumn('notified', 'integer', (c) => c.notNull())
          .addColumn('fired_at', sql.raw(big), (c) => c.notNull())
          .addColumn('resolved_at', sql.raw(big))
          .addColumn('acknowledged_at', sql.raw(big))
          .execute();
        await db.schema.createIndex('alerts_status').on('alerts').columns(['status', 'fired_at']).execute();
        await db.schema.createIndex('alerts_instance').on('alerts').columns(['instance_id', 'status']).execute();
        await db.schema
          .createTable('alert_notices')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('alert_id', 'text', (c) => c.notNull().references('alerts.id').onDelete('cascade'))
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull())
          .addColumn('next_attempt_at', sql.raw(big), (c) => c.notNull())
          .addColumn('last_status', 'integer')
          .addColumn('last_error', 'text')
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('delivered_at', sql.raw(big))
          .execute();
        await db.schema.createIndex('alert_notices_status').on('alert_notices').columns(['status', 'created_at']).execute();
      },
    },
    // admin/: backfill (the archive of delivered events, re-delivery jobs with their cursor).
    '0013_admin_backfill': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('event_archive')
          .addColumn('seq', sql.raw(big), (c) => c.primaryKey())
          .addColumn('event_id', 'text', (c) => c.notNull())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('event_type', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.createIndex('event_archive_instance').on('event_archive').columns(['instance_id', 'seq']).execute();
        await db.schema.createIndex('event_archive_created').on('event_archive').columns(['created_at']).execute();
        await db.schema.createIndex('event_archive_event').on('event_archive').columns(['event_id']).execute();
        await db.schema
          .createTable('backfill_jobs')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
          .addColumn('target', 'text', (c) => c.notNull())
          .addColumn('since_text', 'text', (c) => c.notNull())
          .addColumn('until_text', 'text')
          .addColumn('from_seq', sql.raw(big), (c) => c.notNull())
          .addColumn('to_seq', sql.raw(big), (c) => c.notNull())
          .addColumn('since_at', sql.raw(big))
          .addColumn('until_at', sql.raw(big))
          .addColumn('event_types', 'text')
          .addColumn('rate_per_second', 'integer', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('cursor_seq', sql.raw(big), (c) => c.notNull())
          .addColumn('total', 'integer', (c) => c.notNull())
          .addColumn('delivered', 'integer', (c) => c.notNull())
          .addColumn('last_event_id', 'text')
          .addColumn('error', 'text')
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .addColumn('finished_at', sql.raw(big))
          .execute();
        await db.schema.createIndex('backfill_jobs_status').on('backfill_jobs').columns(['status']).execute();
      },
    },
    // auth/: users of the web interface, their refresh tokens (rotating, in families) and invitations.
    '0014_auth_users': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('auth_users')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('email', 'text', (c) => c.notNull().unique())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('password_hash', 'text', (c) => c.notNull())
          .addColumn('role', 'text', (c) => c.notNull())
          // Bumped when the password changes: access tokens carry it and older ones stop working.
          .addColumn('session_version', 'integer', (c) => c.notNull().defaultTo(1))
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .addColumn('updated_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('auth_refresh_tokens')
          .addColumn('hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull().references('auth_users.id').onDelete('cascade'))
          .addColumn('family', 'text', (c) => c.notNull())
          .addColumn('expires_at', sql.raw(big), (c) => c.notNull())
          .addColumn('used_at', sql.raw(big))
          .addColumn('revoked_at', sql.raw(big))
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.createIndex('auth_refresh_tokens_family').on('auth_refresh_tokens').columns(['family']).execute();
        await db.schema.createIndex('auth_refresh_tokens_user').on('auth_refresh_tokens').columns(['user_id']).execute();
        await db.schema
          .createTable('auth_invitations')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('code_hash', 'text', (c) => c.notNull().unique())
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('created_by', 'text', (c) => c.notNull())
          .addColumn('expires_at', sql.raw(big), (c) => c.notNull())
          .addColumn('used_at', sql.raw(big))
          .addColumn('used_by', 'text')
          .addColumn('created_at', sql.raw(big), (c) => c.notNull())
          .execute();
      },
    },
    '0015_security_webhook_admin_set': {
      // 1 when the admin key set the webhook URL: its deliveries may reach private addresses (docs/channels.md).
      async up(db: Kysely<any>) {
        await db.schema
          .alterTable('instances')
          .addColumn('webhook_admin_set', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
      },
    },
    '0016_security_media_key_index': {
      // The orphan media sweep asks which media keys stored messages still reference.
      async up(db: Kysely<any>) {
        await db.schema.createIndex('messages_media_key').on('messages').column('media_key').execute();
      },
    },
    '0017_security_alert_admin_set': {
      // 1 when the admin key created the alert rule: its notices may reach private addresses. Rules
      // made before were checked at creation (private only for the admin key), so they keep working.
      async up(db: Kysely<any>) {
        await db.schema
          .alterTable('alert_rules')
          .addColumn('webhook_admin_set', 'integer', (c) => c.notNull().defaultTo(1))
          .execute();
      },
    },
    '0018_perf_storage_indexes': {
      // Storage at scale (bench/storage-scale.ts): every read of the message store walks an index in
      // the order it pages by, and the pruner finds old outbox rows without scanning the table.
      async up(db: Kysely<any>) {
        // GET /message/find: one instance's messages newest first (message_timestamp, created_at, message_id).
        await db.schema
          .createIndex('messages_instance_order')
          .on('messages')
          .columns(['instance_id', 'message_timestamp', 'created_at', 'message_id'])
          .execute();
        // One chat's messages in the same order: /chat/history pages and each chat's last message in
        // /chat/list. It covers what messages_instance_chat_time (0007) did.
        await db.schema
          .createIndex('messages_instance_chat_order')
          .on('messages')
          .columns(['instance_id', 'remote_jid', 'message_timestamp', 'created_at', 'message_id'])
          .execute();
        await db.schema.dropIndex('messages_instance_chat_time').execute();
        // Most messages carry no media: index only those that do (one index entry less per text
        // message written); the orphan sweep's `media_key in (...)` implies the condition.
        await db.schema.dropIndex('messages_media_key').execute();
        await db.schema
          .createIndex('messages_media_key')
          .on('messages')
          .column('media_key')
          .where(sql.ref('media_key'), 'is not', null)
          .execute();
        // The outbox pruner takes delivered events older than the retention, oldest first.
        await db.schema.createIndex('outbox_created').on('outbox').columns(['created_at', 'seq']).execute();
      },
    },
    '0019_perf_webhook_lanes': {
      // `seq` in every envelope: the last number given to an event of each instance, advanced in the
      // transaction that stores the events. And the opt-in batched webhook of an instance (JSON
      // `{ maxEvents, maxWaitMs }`, null: one POST per event).
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('event_sequences')
          .addColumn('instance_id', 'text', (c) => c.primaryKey().references('instances.id').onDelete('cascade'))
          .addColumn('seq', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.alterTable('instances').addColumn('webhook_batch', 'text').execute();
      },
    },
    '0020_perf_message_search': {
      // Storage at scale, second step (bench/storage-scale.ts; figures in bench/README.md). Poll
      // votes are kept in `messages` but never listed: the read indexes leave them out (partial
      // indexes; the queries spell the same condition with the literal), so counting an instance's
      // or a chat's messages reads the index alone. `body_text` is the readable text /message/find
      // searches (expressions.ts), kept by the database itself: read from the JSON once per write,
      // not once per row and request.
      async up(db: Kysely<any>) {
        const notVote = sql.raw(NOT_POLL_VOTE);
        if (dialect === 'postgres') {
          // A stored column (the table is rewritten once). No index carries it: a btree entry is
          // limited to a third of a page, and a trigram index over every instance's messages reads
          // more than the instance's own rows do (bench/README.md, issue 18); the filter reads those rows.
          await sql`alter table messages add column body_text text generated always as (${messageText('postgres')}) stored`.execute(db);
          await sql`create index messages_instance_newest on messages (instance_id, message_timestamp, created_at, message_id) where ${notVote}`.execute(
            db,
          );
          await sql`create index messages_chat_newest on messages (instance_id, remote_jid, message_timestamp, created_at, message_id) where ${notVote}`.execute(
            db,
          );
        } else {
          // Computed on read (SQLite adds only virtual columns to a table) and stored in the indexes,
          // so the text filter reads no row. Both carry it: SQLite may walk either for a whole
          // instance (their costs tie), and a chat's search uses the second.
          await sql`alter table messages add column body_text text generated always as (${messageText('sqlite')}) virtual`.execute(db);
          await sql`create index messages_instance_newest on messages (instance_id, message_timestamp, created_at, message_id, body_text) where ${notVote}`.execute(
            db,
          );
          await sql`create index messages_chat_newest on messages (instance_id, remote_jid, message_timestamp, created_at, message_id, body_text) where ${notVote}`.execute(
            db,
          );
        }
        await db.schema.dropIndex('messages_instance_order').execute();
        await db.schema.dropIndex('messages_instance_chat_order').execute();
        // GET /chat/list's order (pinned first, latest pin first, then by last activity): a page is
        // read along the index instead of sorting every chat of the account.
        await sql`create index whatsapp_chats_list_order on whatsapp_chats (instance_id, deleted, (${sql.raw(CHAT_LIST_ORDER[0])}), pinned_at desc, (${sql.raw(CHAT_LIST_ORDER[1])}) desc, jid)`.execute(
          db,
        );
      },
    },
    '0021_cluster': {
      // Cluster mode (src/cluster/, docs/deployment.md): the processes sharing a PostgreSQL database
      // announce themselves, and each instance's live session belongs to one of them through a
      // lease. Times are the database's clock in milliseconds, so processes never compare clocks.
      // SQLite gets the tables too (one migration set) and never uses them.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('cluster_nodes')
          .addColumn('node_id', 'text', (c) => c.primaryKey())
          .addColumn('address', 'text', (c) => c.notNull())
          .addColumn('started_at', sql.raw(big), (c) => c.notNull())
          .addColumn('heartbeat_at', sql.raw(big), (c) => c.notNull())
          .addColumn('draining', 'boolean', (c) => c.notNull().defaultTo(false))
          // Holds the deployment's lock (storage/active-lease.ts): admin routes and deployment-wide jobs run there.
          .addColumn('leader', 'boolean', (c) => c.notNull().defaultTo(false))
          .execute();
        await db.schema
          .createTable('instance_leases')
          .addColumn('instance_id', 'text', (c) => c.primaryKey().references('instances.id').onDelete('cascade'))
          .addColumn('owner', 'text')
          // Grows by one at every change of owner: the fencing token of the owner's writes.
          .addColumn('epoch', sql.raw(big), (c) => c.notNull())
          .addColumn('expires_at', sql.raw(big), (c) => c.notNull())
          .execute();
        await db.schema.createIndex('instance_leases_owner').on('instance_leases').column('owner').execute();
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

/**
 * `schema` names the PostgreSQL schema that holds Waygate's tables. Kysely looks for its own
 * bookkeeping tables in every schema it sees (the search path's, storage/search-path.ts) unless told
 * which one, so without it a second Waygate schema on the same search path would find the first
 * one's lock table and never create its own.
 */
export async function migrateToLatest(db: Kysely<any>, dialect: Dialect, schema?: string): Promise<void> {
  failOn((await migrator(db, dialect, schema).migrateToLatest()).error);
}

/** Applies the migrations up to and including `last`: a database as an older release left it (tests of a migration over existing rows). */
export async function migrateUpTo(db: Kysely<any>, dialect: Dialect, last: string, schema?: string): Promise<void> {
  failOn((await migrator(db, dialect, schema).migrateTo(last)).error);
}

/** Kysely's migrator reports a failure as a result; ours throw it. */
function failOn(error: unknown): void {
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${JSON.stringify(error)}`);
}

function migrator(db: Kysely<any>, dialect: Dialect, schema: string | undefined): Migrator {
  return new Migrator({ db, provider: new StaticProvider(dialect), ...(schema ? { migrationTableSchema: schema } : {}) });
}
