/**
 * Migration 0020_perf_message_search on SQLite and PostgreSQL: a database left by the previous
 * release, with messages in it, is migrated; the text search (`body_text`, kept by the database)
 * then finds what reading the JSON found, follows inserts, edits, revocations and deletions, and the
 * statements of /message/find, /chat/history and /chat/list read along the new indexes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, sql, type LogEvent } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WhatsAppStateStore } from '../network/whatsapp/state-store.js';
import { dropSchema, openStorage, type Dialect, type Storage } from '../storage/db.js';
import { migrateUpTo } from '../storage/migrations.js';
import { SearchPathPostgresDialect } from '../storage/search-path.js';
import type { Database } from '../storage/schema.js';
import { insertInstanceRow } from '../../test/support/rows.js';
import { MessageStore, POLL_VOTE_TYPE, REVOKED_TYPE, type StoredMessage } from './store.js';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CHAT = '5511900000001@s.whatsapp.net';
const OTHER_CHAT = '5511900000002@s.whatsapp.net';

/** A connection with no migrations run, and a second one that records every statement it runs. */
function connect(dialect: Dialect, target: string, schema: string | undefined, log?: (event: LogEvent) => void): Kysely<Database> {
  const options = log ? { log } : {};
  if (dialect === 'sqlite') return new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(target) }), ...options });
  const pool = new pg.Pool({ connectionString: target, max: 2, options: `-c search_path=${schema}` });
  return new Kysely<Database>({ dialect: new SearchPathPostgresDialect({ pool }), ...options });
}

function message(
  instanceId: string,
  id: string,
  content: Record<string, unknown>,
  at: number,
  extra: Partial<StoredMessage> = {},
): StoredMessage {
  return {
    instanceId,
    key: { remoteJid: CHAT, fromMe: false, id },
    messageType: Object.keys(content)[0] ?? 'conversation',
    message: content,
    messageTimestamp: at,
    createdAt: at * 1000,
    ...extra,
  };
}

/** The rows an older release wrote: its own JSON, every place a text can sit, and a poll vote. */
const OLD_ROWS = (instanceId: string) => [
  message(instanceId, 'OLD1', { conversation: 'Bom DIA, tem pão?' }, 1_780_000_001),
  message(instanceId, 'OLD2', { extendedTextMessage: { text: 'veja https://example.com 100% grátis' } }, 1_780_000_002),
  message(instanceId, 'OLD3', { imageMessage: { caption: 'FOTO do pedido', mimetype: 'image/jpeg' } }, 1_780_000_003),
  message(instanceId, 'OLD4', { documentMessage: { caption: 'nota fiscal', fileName: 'nf.pdf' } }, 1_780_000_004),
  message(instanceId, 'OLD5', { locationMessage: { degreesLatitude: 1, degreesLongitude: 2, name: 'bom dia square' } }, 1_780_000_005),
  message(instanceId, 'OLD6', { conversation: 'outra conversa, bom dia' }, 1_780_000_006, {
    key: { remoteJid: OTHER_CHAT, fromMe: true, id: 'OLD6' },
  }),
  {
    ...message(instanceId, 'VOTE1', { pollMessageId: 'POLL1', selectedOptions: ['bom dia'] }, 1_780_000_007),
    messageType: POLL_VOTE_TYPE,
    participant: '5511900000009@s.whatsapp.net',
  },
];

describe.each(['sqlite', 'postgres'] as const)('message search after migration 0020 on %s', (dialect) => {
  const schema = dialect === 'postgres' ? `wg_search_${process.pid}_${randomBytes(4).toString('hex')}` : undefined;
  const target = dialect === 'sqlite' ? path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wg-search-')), 'db.sqlite') : PG_URL;
  const url = dialect === 'sqlite' ? `sqlite:${target}` : PG_URL;
  const instanceId = randomUUID();
  let storage: Storage;
  let store: MessageStore;

  beforeAll(async () => {
    // The previous release's database, with rows written by its message store.
    if (schema) {
      const admin = connect(dialect, target, 'public');
      await sql`create schema ${sql.id(schema)}`.execute(admin);
      await admin.destroy();
    }
    const old = connect(dialect, target, schema);
    await migrateUpTo(old, dialect, '0019_perf_webhook_lanes', schema);
    await insertInstanceRow(old, instanceId, `search-${instanceId}`);
    const writer = new MessageStore(old);
    await Promise.all(OLD_ROWS(instanceId).map((row) => writer.save(row)));
    await writer.settled();
    await old.destroy();
    // This release opens it: 0020 runs over the rows.
    storage = await openStorage(url, schema ? { schema, poolSize: 3 } : {});
    store = new MessageStore(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    if (schema) await dropSchema(PG_URL, schema);
  });

  const ids = async (text: string, remoteJid?: string) => {
    const found = await store.search(instanceId, { text, ...(remoteJid ? { remoteJid } : {}) }, { offset: 0, limit: 50 });
    expect(found.items).toHaveLength(found.total);
    return found.items.map((m) => m.key.id);
  };

  it('finds the rows written before the migration as the JSON reading did: text, extended text and captions, any case, wildcards literal', async () => {
    const rows = await sql<{ message_id: string; body_text: string | null }>`
      select message_id, body_text from messages where instance_id = ${instanceId} order by message_id`.execute(storage.db);
    expect(Object.fromEntries(rows.rows.map((r) => [r.message_id, r.body_text]))).toEqual({
      OLD1: 'Bom DIA, tem pão?',
      OLD2: 'veja https://example.com 100% grátis',
      OLD3: 'FOTO do pedido',
      OLD4: 'nota fiscal',
      OLD5: null,
      OLD6: 'outra conversa, bom dia',
      VOTE1: null,
    });
    // Newest first; the location's name is not its text; the poll vote is never listed.
    expect(await ids('BOM dia')).toEqual(['OLD6', 'OLD1']);
    expect(await ids('bom dia', CHAT)).toEqual(['OLD1']);
    expect(await ids('foto')).toEqual(['OLD3']);
    expect(await ids('NF')).toEqual([]);
    expect(await ids('nota')).toEqual(['OLD4']);
    expect(await ids('100%')).toEqual(['OLD2']);
    expect(await ids('1_0')).toEqual([]);
    expect((await store.search(instanceId, {}, { offset: 0, limit: 50 })).total).toBe(6);
    expect(await store.pollVotes(instanceId, 'POLL1')).toEqual([
      { voter: '5511900000009@s.whatsapp.net', selectedOptions: ['bom dia'], messageTimestamp: 1_780_000_007 },
    ]);
  });

  it('gives the same total for every page: counted with the page, told by a page that is not full, or counted alone', async () => {
    const all = (await store.search(instanceId, {}, { offset: 0, limit: 50 })).items.map((m) => m.key.id);
    const bomDia = ['OLD6', 'OLD1'];
    for (const [filter, expected] of [
      [{}, all],
      [{ text: 'bom dia' }, bomDia],
      [{ remoteJid: CHAT }, all.filter((id) => id !== 'OLD6')],
      [{ text: 'nothing like this' }, []],
    ] as const) {
      for (const page of [
        { offset: 0, limit: 1 },
        { offset: 0, limit: 50 },
        { offset: 1, limit: 1 },
        { offset: 1, limit: 50 },
        { offset: 40, limit: 5 },
      ]) {
        const found = await store.search(instanceId, filter, page);
        expect({ filter, page, total: found.total, ids: found.items.map((m) => m.key.id) }).toEqual({
          filter,
          page,
          total: expected.length,
          ids: expected.slice(page.offset, page.offset + page.limit),
        });
      }
    }
  });

  it('follows new messages, edits, revocations, re-saves and deletions', async () => {
    await store.save(message(instanceId, 'NEW1', { conversation: 'Pedido número 42 enviado' }, 1_780_000_100));
    await store.save(message(instanceId, 'NEW2', { videoMessage: { caption: 'vídeo do pedido 42' } }, 1_780_000_101));
    // Case folds as the database's lower() does (ASCII on SQLite), as before the migration.
    expect(await ids('PEDIDO número 42')).toEqual(['NEW1']);
    expect(await ids('pedido')).toEqual(['NEW2', 'NEW1', 'OLD3']);

    await store.replaceContent(instanceId, 'NEW1', 'conversation', { conversation: 'pedido cancelado' });
    expect(await ids('número 42')).toEqual([]);
    expect(await ids('cancelado')).toEqual(['NEW1']);

    // The same message saved again (an update through the upsert) with another caption.
    await store.save(message(instanceId, 'NEW2', { videoMessage: { caption: 'vídeo trocado' } }, 1_780_000_101));
    expect(await ids('trocado')).toEqual(['NEW2']);
    expect(await ids('vídeo do pedido')).toEqual([]);

    await store.replaceContent(instanceId, 'OLD3', REVOKED_TYPE, {});
    expect(await ids('foto')).toEqual([]);

    await storage.db.deleteFrom('messages').where('instance_id', '=', instanceId).where('message_id', '=', 'NEW2').execute();
    expect(await ids('trocado')).toEqual([]);
  });

  it('stores a text with a NUL character, and the text search still answers', async () => {
    await store.save(message(instanceId, 'NUL1', { conversation: 'antes\u0000depois' }, 1_780_000_200));
    expect((await store.find(instanceId, 'NUL1'))?.message).toEqual({ conversation: 'antes\u0000depois' });
    // PostgreSQL's JSON cannot give it as text: that message has none there (storage/expressions.ts).
    expect(await ids('antes')).toEqual(dialect === 'sqlite' ? ['NUL1'] : []);
  });

  it('runs the listings along the new indexes: counts from the index, the chat list without a sort', async () => {
    const statements: CompiledQuery[] = [];
    let recording = true;
    const traced = connect(dialect, target, schema, (event) => {
      if (recording && event.level === 'query') statements.push(event.query);
    });
    try {
      const tracedStore = new MessageStore(traced);
      const state = new WhatsAppStateStore(traced, { now: () => 0 });
      const statementsOf = async (run: () => Promise<unknown>) => {
        const before = statements.length;
        await run();
        return statements.length - before;
      };
      // The page and its count in one statement; with a text filter the page alone when it is not
      // full (the count would read every text again), the count too when it is.
      expect(await statementsOf(() => tracedStore.search(instanceId, {}, { offset: 0, limit: 10 }))).toBe(1);
      expect(await statementsOf(() => tracedStore.search(instanceId, { text: 'bom' }, { offset: 0, limit: 10 }))).toBe(1);
      expect(await statementsOf(() => tracedStore.search(instanceId, { text: 'bom' }, { offset: 0, limit: 1 }))).toBe(2);
      expect(await statementsOf(() => tracedStore.search(instanceId, { remoteJid: CHAT, since: 1 }, { offset: 0, limit: 10 }))).toBe(1);
      await tracedStore.latestOfChats(instanceId, [{ remoteJid: CHAT }, { remoteJid: OTHER_CHAT, since: 5 }]);
      const chatStatements = statements.length;
      await state.listChats(instanceId, {}, { offset: 0, limit: 10 });
      await state.listChats(instanceId, { query: 'bom' }, { offset: 0, limit: 10 });
      recording = false;
      // No chat here: each list is its page statement alone (an empty first page counts nothing).
      expect(statements).toHaveLength(chatStatements + 2);
      const plans: string[] = [];
      for (const statement of statements) {
        const explain = CompiledQuery.raw(`${dialect === 'sqlite' ? 'explain query plan' : 'explain'} ${statement.sql}`, [
          ...statement.parameters,
        ]);
        const rows =
          dialect === 'sqlite'
            ? (await traced.executeQuery<{ detail: string }>(explain)).rows.map((r) => r.detail)
            : // Few rows here: without this PostgreSQL would rather read the whole table.
              await traced.transaction().execute(async (trx) => {
                await sql`set local enable_seqscan = off`.execute(trx);
                return (await trx.executeQuery<{ 'QUERY PLAN': string }>(explain)).rows.map((r) => r['QUERY PLAN']);
              });
        plans.push(rows.join('\n'));
      }
      // Every message statement reads one of the partial indexes (either serves a count over the
      // instance: on SQLite both carry body_text); pages walk their order, never sort.
      const sorted = /TEMP B-TREE|Sort/;
      expect(plans.slice(0, chatStatements).every((plan) => /messages_(instance|chat)_newest/.test(plan))).toBe(true);
      // The whole instance's page with its count, the text's page, its page and count, the chat's page.
      for (const pageOf of [0, 1, 2]) {
        expect(plans[pageOf]).toContain('messages_instance_newest');
        expect(plans[pageOf]).not.toMatch(sorted);
      }
      expect(plans[4]).toContain('messages_chat_newest');
      expect(plans[4]).not.toMatch(sorted);
      expect(plans[5]).toContain('messages_chat_newest');
      // The chat list's page follows whatsapp_chats_list_order.
      const page = plans[chatStatements]!;
      expect(page).toContain('whatsapp_chats_list_order');
      expect(page).not.toMatch(sorted);
      // A chat search looks into each chat's messages along the chat index.
      expect(plans[chatStatements + 1]).toContain('messages_chat_newest');
    } finally {
      await traced.destroy();
    }
  });
});
