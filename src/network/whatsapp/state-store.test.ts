/**
 * What WhatsApp does not serve on demand, kept in the database from Baileys' events, on SQLite and
 * PostgreSQL: recorded `messaging-history.set`, `chats.upsert`, `chats.update`, `messages.upsert`,
 * `contacts.upsert`, `labels.*` and `call` payloads go through a linked session's real Baileys
 * socket (emitted on its event emitter, as Baileys does after decoding), and the chat list, search,
 * history, contacts and call log read them back, also after the gateway restarts.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { proto, type BaileysEventMap, type WAMessage } from 'baileys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageStore, messageTypeOf } from '../../message-store/store.js';
import { dropSchema, type Storage } from '../../storage/db.js';
import type { CanonicalEvent } from '../port.js';
import * as F from './fixtures/baileys-payloads.js';
import { FakeWaServer } from './fixtures/fake-wa-server.js';
import { storageWithInstance } from './fixtures/harness.js';
import { chatPatchOf } from './state-store.js';
import { feed, loginSeeded, type SeededAccount } from './fixtures/seeded-account.js';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const dialects = [
  { name: 'sqlite', url: () => `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wa-state-')), 'state.db')}`, schema: undefined },
  { name: 'postgres', url: () => PG_URL, schema: `wg_wa_state_${process.pid}_${randomBytes(4).toString('hex')}` },
] as const;

const OTHER_PN = '5511977776666@s.whatsapp.net';
const PINNED_GROUP = '120363000000000002@g.us';
const ARCHIVED = '5511955554444@s.whatsapp.net';
const page = { offset: 0, limit: 50 };

function received(fields: Record<string, unknown>): WAMessage {
  return proto.WebMessageInfo.fromObject(fields) as WAMessage;
}

const fromOther = received({
  key: { remoteJid: OTHER_PN, fromMe: false, id: '3EB0OTHER001' },
  pushName: 'João',
  messageTimestamp: 1_780_000_700,
  message: { conversation: 'bom dia, tem pão?' },
});
const fromOther2 = received({
  key: { remoteJid: OTHER_PN, fromMe: false, id: '3EB0OTHER002' },
  pushName: 'João',
  messageTimestamp: 1_780_000_710,
  message: { conversation: 'e café' },
});
const reactionToOther = received({
  key: { remoteJid: OTHER_PN, fromMe: false, id: '3EB0OTHER003' },
  messageTimestamp: 1_780_000_720,
  message: { reactionMessage: { key: { remoteJid: OTHER_PN, fromMe: true, id: 'X' }, text: '👍' } },
});

/** The recorded batches, in the order a phone's first sync and live traffic bring them. */
const batches: Partial<BaileysEventMap>[] = [
  { 'messaging-history.set': F.history(3) },
  {
    'chats.upsert': [
      { id: PINNED_GROUP, name: 'Padaria', pinned: 1_780_000_050, conversationTimestamp: 1_779_000_000, unreadCount: 0 },
      { id: ARCHIVED, archived: true, conversationTimestamp: 1_780_000_900, unreadCount: 0 },
      // The status feed is not a chat.
      { id: 'status@broadcast', conversationTimestamp: 1_780_000_999, unreadCount: 3 },
    ],
  },
  { 'contacts.upsert': [...F.contacts, { id: ARCHIVED, name: 'Arquivado' }] },
  { 'messages.upsert': { type: 'notify', messages: [fromOther, fromOther2, reactionToOther] } },
  { 'chats.update': [{ id: ARCHIVED, muteEndTime: 1_900_000_000_000, unreadCount: -1 }] },
  { 'labels.edit': { id: '1', name: 'Pedido', color: 2, deleted: false } },
  { 'labels.association': { type: 'add', association: { type: 'label_jid' as never, chatId: OTHER_PN, labelId: '1' } } },
  {
    call: [
      {
        chatId: F.CONTACT_LID,
        from: F.CONTACT_LID,
        callerPn: F.CONTACT_PN,
        id: 'CALLSTATE1',
        date: new Date(1_780_001_000_000),
        isVideo: false,
        isGroup: false,
        status: 'offer',
        offline: false,
      },
    ],
  },
  {
    call: [
      {
        chatId: F.CONTACT_LID,
        from: F.CONTACT_LID,
        id: 'CALLSTATE1',
        date: new Date(1_780_001_030_000),
        status: 'timeout',
        offline: false,
      },
    ],
  },
];

describe('chat changes read from Baileys chats', () => {
  it('a history conversation (decoded protobuf) leaves out what it does not carry; an update unpins and unmutes', () => {
    // A later history chunk names the chat again without its pin or mute: they stay.
    const conversation = proto.Conversation.decode(
      proto.Conversation.encode({ id: OTHER_PN, unreadCount: 2, conversationTimestamp: 1_780_000_000 }).finish(),
    );
    expect(conversation.pinned).toBeNull();
    expect(chatPatchOf(conversation, true)).toEqual({ unreadCount: 2, conversationTimestamp: 1_780_000_000 });
    const pinned = proto.Conversation.decode(
      proto.Conversation.encode({ id: OTHER_PN, pinned: 1_780_000_050, muteEndTime: 1_900_000_000_000 }).finish(),
    );
    expect(chatPatchOf(pinned, true)).toMatchObject({ pinnedAt: 1_780_000_050, mutedUntil: 1_900_000_000 });
    // App-state updates say null for "no longer".
    expect(chatPatchOf({ id: OTHER_PN, pinned: null, muteEndTime: null }, false)).toEqual({ pinnedAt: null, mutedUntil: null });
  });
});

describe.each(dialects)('whatsapp state kept on $name', ({ url, schema }) => {
  let server: FakeWaServer;
  let wsUrl: string;
  let storage: Storage;
  let account: SeededAccount;
  let messages: MessageStore;
  /** What the gateway's recorder does with MESSAGE events: the message store keeps them. */
  function recordMessages(account: SeededAccount): void {
    const emit = account.host.emit.bind(account.host);
    account.host.emit = async (event: CanonicalEvent) => {
      // (The recorder skips content that changes another message: reactions, edits, deletions.)
      if (event.type === 'MESSAGE' && !('reactionMessage' in (event.data.message as object))) {
        const data = event.data as {
          key: { remoteJid: string; fromMe: boolean; id: string; participant?: string };
          pushName?: string;
          message: Record<string, unknown>;
          messageTimestamp: number;
        };
        await messages.save({
          instanceId: account.instanceId,
          key: { remoteJid: data.key.remoteJid, fromMe: data.key.fromMe, id: data.key.id },
          ...(data.key.participant ? { participant: data.key.participant } : {}),
          ...(data.pushName ? { pushName: data.pushName } : {}),
          messageType: messageTypeOf(data.message),
          message: data.message,
          messageTimestamp: data.messageTimestamp,
          createdAt: Date.now(),
        });
      }
      return emit(event);
    };
  }

  beforeAll(async () => {
    server = new FakeWaServer();
    wsUrl = await server.start();
    let instanceId: string;
    ({ storage, instanceId } = await storageWithInstance(url(), schema));
    messages = new MessageStore(storage.db);
    account = await loginSeeded(server, wsUrl, storage, instanceId, 'android');
    recordMessages(account);
    for (const batch of batches) await feed(account, batch);
  });

  afterAll(async () => {
    await account.driver.stop();
    await server.stop();
    await storage.close();
    if (schema) await dropSchema(PG_URL, schema);
  });

  it('lists chats pinned first, then by last activity, with names, unread counts, marks and last messages', async () => {
    const { items, total } = await account.session.chats!.list({}, page);
    expect(total).toBe(4);
    expect(items.map((c) => c.chatId)).toEqual([PINNED_GROUP, ARCHIVED, OTHER_PN, F.CONTACT_PN]);
    const [group, archived, other, maria] = items;
    expect(group).toMatchObject({ kind: 'group', name: 'Padaria', pinned: true, archived: false, unreadCount: 0, lastMessage: null });
    expect(archived).toMatchObject({
      kind: 'person',
      name: 'Arquivado',
      archived: true,
      markedUnread: true,
      muted: true,
      mutedUntil: 1_900_000_000,
      conversationTimestamp: 1_780_000_900,
    });
    // Two texts counted unread; the reaction changes a message and is not one.
    expect(other).toMatchObject({ name: 'João', unreadCount: 2, labels: ['1'], conversationTimestamp: 1_780_000_720 });
    expect(other?.lastMessage).toMatchObject({
      key: { remoteJid: OTHER_PN, fromMe: false, id: '3EB0OTHER002' },
      message: { conversation: 'e café' },
      messageTimestamp: 1_780_000_710,
    });
    // History sync named Maria's chat by LID; the mapping it carried shows her phone address.
    expect(maria).toMatchObject({ chatId: F.CONTACT_PN, name: 'Maria', unreadCount: 2, conversationTimestamp: 1_779_999_999 });
    expect(maria?.lastMessage?.key.id).toBe('3EB0HIST0002');
  });

  it('filters by archived, pinned, unread, label, kind and searches names, numbers and message text', async () => {
    const chats = account.session.chats!;
    const ids = async (filter: Parameters<typeof chats.list>[0]) => (await chats.list(filter, page)).items.map((c) => c.chatId);
    expect(await ids({ archived: true })).toEqual([ARCHIVED]);
    expect(await ids({ pinned: true })).toEqual([PINNED_GROUP]);
    expect(await ids({ unread: true })).toEqual([ARCHIVED, OTHER_PN, F.CONTACT_PN]);
    expect(await ids({ unread: false })).toEqual([PINNED_GROUP]);
    expect(await ids({ labelId: '1' })).toEqual([OTHER_PN]);
    expect(await ids({ kind: 'group' })).toEqual([PINNED_GROUP]);
    expect(await ids({ kind: 'person', archived: false })).toEqual([OTHER_PN, F.CONTACT_PN]);
    expect(await ids({ query: 'PÃO' })).toEqual([OTHER_PN]);
    expect(await ids({ query: 'old 1' })).toEqual([F.CONTACT_PN]);
    expect(await ids({ query: 'padaria' })).toEqual([PINNED_GROUP]);
    expect(await ids({ query: '5511955' })).toEqual([ARCHIVED]);
    expect(await ids({ query: '100%_' })).toEqual([]);
    expect((await chats.list({}, { offset: 1, limit: 2 })).items.map((c) => c.chatId)).toEqual([ARCHIVED, OTHER_PN]);
  });

  it('reads a page of chats in a fixed number of statements, each chat as `get` shows it', async () => {
    const chats = account.session.chats!;
    // A label on a chat's last message, and a poll vote newer than it (votes are never a last message).
    await account.driver.state.linkLabel(account.instanceId, '1', OTHER_PN, '3EB0OTHER002', true);
    // More labels on the chat itself: listed in number order, as `get` lists them.
    for (const label of ['10', '2']) await account.driver.state.linkLabel(account.instanceId, label, OTHER_PN, undefined, true);
    await messages.savePollVote(account.instanceId, {
      key: { remoteJid: OTHER_PN, fromMe: false, id: '3EB0VOTE0001' },
      pollMessageId: 'POLL1',
      voter: OTHER_PN,
      selectedOptions: ['a'],
      messageTimestamp: 1_780_000_800,
      createdAt: Date.now(),
    });
    try {
      const executor = storage.db.getExecutor();
      const execute = executor.executeQuery.bind(executor);
      let statements = 0;
      executor.executeQuery = ((...args: Parameters<typeof execute>) => {
        statements += 1;
        return execute(...args);
      }) as typeof executor.executeQuery;
      const counted = async (run: () => Promise<unknown>) => {
        statements = 0;
        await run();
        return statements;
      };
      let listed: Awaited<ReturnType<typeof chats.list>> | undefined;
      let first: Awaited<ReturnType<typeof chats.list>> | undefined;
      let pastTheEnd: Awaited<ReturnType<typeof chats.list>> | undefined;
      const wholePage = await counted(async () => (listed = await chats.list({}, page)));
      const onePerPage = await counted(async () => (first = await chats.list({}, { offset: 0, limit: 1 })));
      const emptyPage = await counted(async () => (pastTheEnd = await chats.list({}, { offset: 10, limit: 5 })));
      executor.executeQuery = execute;
      // The rows with their count and own labels, their last messages, and the labels of the last
      // messages of chats with labelled messages (one here): 3 statements; 2 without such a chat.
      expect(wholePage).toBe(3);
      expect(first!.items.map((c) => c.chatId)).not.toContain(OTHER_PN);
      expect(onePerPage).toBe(2);
      // A page past the end counts on its own.
      expect(emptyPage).toBe(2);
      expect(pastTheEnd).toEqual({ items: [], total: 4 });
      expect(first!.total).toBe(4);
      expect(listed!.total).toBe(4);
      expect(listed!.items).toHaveLength(4);
      for (const item of listed!.items) expect(item).toEqual(await chats.get(item.chatId));
      const other = listed!.items.find((c) => c.chatId === OTHER_PN);
      expect(other?.lastMessage).toMatchObject({ key: { id: '3EB0OTHER002' }, labels: ['1'] });
      expect(other?.labels).toEqual(['1', '2', '10']);
    } finally {
      await account.driver.state.linkLabel(account.instanceId, '1', OTHER_PN, '3EB0OTHER002', false);
      for (const label of ['10', '2']) await account.driver.state.linkLabel(account.instanceId, label, OTHER_PN, undefined, false);
    }
  });

  it('pages a chat history newest first, history-sync messages included', async () => {
    const history = await account.session.chats!.history(F.CONTACT_PN, { offset: 0, limit: 2 });
    expect(history.total).toBe(3);
    expect(history.items.map((m) => [m.key.id, m.key.fromMe, m.message])).toEqual([
      ['3EB0HIST0002', true, { conversation: 'old 2' }],
      ['3EB0HIST0001', false, { conversation: 'old 1' }],
    ]);
    await expect(account.session.chats!.history('5511900000000@s.whatsapp.net', page)).rejects.toMatchObject({ status: 404 });
  });

  it('keeps contacts (people with a phone address) and the call log', async () => {
    const contacts = await account.session.users!.contacts(page);
    expect(contacts.items).toEqual([
      { jid: ARCHIVED, number: '5511955554444', name: 'Arquivado', isBusiness: false },
      { jid: OTHER_PN, number: '5511977776666', name: 'João', isBusiness: false },
      { jid: F.CONTACT_PN, number: '5511988887777', name: 'Maria Silva', isBusiness: false },
    ]);
    const calls = await account.session.calls!.history(page);
    expect(calls.items).toEqual([
      {
        callId: 'CALLSTATE1',
        from: F.CONTACT_PN,
        direction: 'incoming',
        isVideo: false,
        isGroup: false,
        status: 'missed',
        rejectedBy: null,
        offeredAt: 1_780_001_000,
        endedAt: 1_780_001_030,
      },
    ]);
  });

  it('a deleted chat leaves the list; its next message brings it back without the old messages', async () => {
    await feed(account, { 'chats.delete': [ARCHIVED] });
    expect((await account.session.chats!.list({}, page)).items.map((c) => c.chatId)).not.toContain(ARCHIVED);
    await feed(account, {
      'messages.upsert': {
        type: 'notify',
        messages: [
          received({
            key: { remoteJid: ARCHIVED, fromMe: false, id: '3EB0BACK0001' },
            messageTimestamp: 1_780_002_000,
            message: { conversation: 'voltei' },
          }),
        ],
      },
    });
    expect(await account.session.chats!.get(ARCHIVED)).toMatchObject({
      chatId: ARCHIVED,
      conversationTimestamp: 1_780_002_000,
      unreadCount: 1,
    });
  });

  it('writes a batch of new messages in many chats in one statement, each chat as one message at a time would leave it', async () => {
    // As a resume's offline messages come: one batch, a message in each of 30 chats (two in the
    // first), and Baileys' update of each chat's time beside it.
    const jids = Array.from({ length: 30 }, (_, i) => `55119330${String(i).padStart(5, '0')}@s.whatsapp.net`);
    const upserts = jids.map((jid, i) =>
      received({
        key: { remoteJid: jid, fromMe: false, id: `3EB0BATCH${i}` },
        messageTimestamp: 1_780_003_000 + i,
        message: { conversation: `n${i}` },
      }),
    );
    upserts.push(
      received({
        key: { remoteJid: jids[0], fromMe: false, id: '3EB0BATCHX' },
        messageTimestamp: 1_780_002_500,
        message: { conversation: 'older' },
      }),
    );
    const executor = storage.db.getExecutor();
    const execute = executor.executeQuery.bind(executor);
    // Chat statements outside a transaction (a transaction's run on its own executor): one commit each.
    let committedAlone = 0;
    executor.executeQuery = ((...args: Parameters<typeof execute>) => {
      if (args[0].sql.includes('whatsapp_chats')) committedAlone += 1;
      return execute(...args);
    }) as typeof executor.executeQuery;
    try {
      await feed(account, {
        'messages.upsert': { type: 'notify', messages: upserts },
        'chats.update': jids.map((id, i) => ({ id, conversationTimestamp: 1_780_003_000 + i })),
      });
    } finally {
      executor.executeQuery = execute;
    }
    // One statement touches the 30 chats; Baileys' updates of their times are folded into it (92
    // commits when each write was its own).
    expect(committedAlone).toBe(1);
    const chats = account.session.chats!;
    for (const [i, jid] of jids.entries()) {
      // The newest time stays (the older message in the first chat does not move it back).
      expect(await chats.get(jid)).toMatchObject({ chatId: jid, unreadCount: i === 0 ? 2 : 1, conversationTimestamp: 1_780_003_000 + i });
    }
  });

  it('keeps a history chat under its phone address when Baileys buffered the history (its buffer drops the pairs; its key store has them)', async () => {
    const lid = '200000000000022@lid';
    const pn = '5511944443333@s.whatsapp.net';
    await feed(
      account,
      {
        'messaging-history.set': {
          chats: [{ id: lid, name: 'Ana', unreadCount: 1, conversationTimestamp: 1_779_500_000 }],
          contacts: [],
          messages: [],
          lidPnMappings: [{ lid, pn }],
          isLatest: false,
          progress: 100,
          syncType: proto.HistorySync.HistorySyncType.RECENT,
        },
      },
      { buffered: true },
    );
    expect(await account.session.chats!.get(pn)).toMatchObject({ chatId: pn, name: 'Ana', unreadCount: 1 });
    expect((await account.session.chats!.list({}, page)).items.map((c) => c.chatId)).not.toContain(lid);
  });

  it('survives a restart: a new driver on the same database lists the same chats', async () => {
    const before = await account.session.chats!.list({}, page);
    await account.driver.stop();
    account = await loginSeeded(server, wsUrl, storage, account.instanceId, undefined);
    const after = await account.session.chats!.list({}, page);
    expect(after).toEqual(before);
    expect((await account.session.calls!.history(page)).total).toBe(1);
  });

  it('a logout forgets the chats, contacts and labels of the account (the next phone may be another one); the call log stays', async () => {
    await account.session.logout();
    const { state } = account.driver;
    expect(await state.listChats(account.instanceId, {}, page)).toEqual({ rows: [], total: 0 });
    expect((await state.listContacts(account.instanceId, page)).total).toBe(0);
    expect(await state.labels(account.instanceId)).toEqual([]);
    expect((await state.listCalls(account.instanceId, page)).total).toBe(1);
  });
});
