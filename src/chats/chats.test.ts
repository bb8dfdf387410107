import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import { LIMITS } from '../network/sandbox/world.js';
import type { Session } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';
import {
  connectedInstance,
  createInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  waitFor,
} from '../../test/support/gateway.js';
import { contactSays, expectError, expectStatus, sandboxAccount, textOf, instanceCalls } from '../../test/support/social.js';

describe('/chat on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  const { get, post } = instanceCalls(() => gw);

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
  });
  afterAll(async () => gw.stop());

  it('lists chats with their last message and unread count, shows one chat, its history and finds it', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const carla = uniqueNumber();
    await sandboxAccount(gw, { number: carla, pushName: 'Carla' });
    await contactSays(gw, carla, a.number!, 'hello there');
    await contactSays(gw, carla, a.number!, 'second message');

    const list = expectStatus(await get(a, '/chat/list'), 200);
    expect(list).toMatchObject({ total: 1, offset: 0, limit: 100 });
    expect(list.items[0]).toMatchObject({
      chatId: `${carla}@s.whatsapp.net`,
      kind: 'person',
      name: 'Carla',
      unreadCount: 2,
      markedUnread: false,
      pinned: false,
      archived: false,
      muted: false,
      mutedUntil: null,
      labels: [],
      lastMessage: {
        key: { remoteJid: `${carla}@s.whatsapp.net`, fromMe: false },
        pushName: 'Carla',
        message: { conversation: 'second message' },
      },
    });
    expect(list.items[0].conversationTimestamp).toBeGreaterThan(0);

    const info = expectStatus(await get(a, `/chat/info?chatId=${carla}`), 200);
    expect(info).toEqual(list.items[0]);
    expect(expectStatus(await get(a, `/chat/info?chatId=${carla}@s.whatsapp.net`), 200).chatId).toBe(info.chatId);

    const history = expectStatus(await get(a, `/chat/history?chatId=${carla}&limit=1`), 200);
    expect(history).toMatchObject({ total: 2, offset: 0, limit: 1 });
    expect(textOf(history.items[0].message)).toBe('second message');
    const older = expectStatus(await get(a, `/chat/history?chatId=${carla}&offset=1&limit=1`), 200);
    expect(textOf(older.items[0].message)).toBe('hello there');

    expect(expectStatus(await get(a, '/chat/search?query=HELLO'), 200).items.map((c: any) => c.chatId)).toEqual([info.chatId]);
    expect(expectStatus(await get(a, '/chat/search?query=carla'), 200).total).toBe(1);
    expect(expectStatus(await get(a, '/chat/search?query=nothing-like-this'), 200)).toMatchObject({ items: [], total: 0 });

    expectError(await get(a, `/chat/info?chatId=${uniqueNumber()}`), 404, /chat .* not found/);
    expectError(await get(a, '/chat/info?chatId=abc'), 400, /querystring.chatId/);
    expectError(await get(a, '/chat/search'), 400, /query is required/);
  });

  it('pins at most three chats, archives (unpinning), mutes for a while or for ever, and filters', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const contacts = [uniqueNumber(), uniqueNumber(), uniqueNumber(), uniqueNumber()];
    for (const contact of contacts) await contactSays(gw, contact, a.number!, `hi from ${contact}`);

    for (const contact of contacts.slice(0, 3))
      expect(expectStatus(await post(a, '/chat/pin', { chatId: contact }), 200).pinned).toBe(true);
    expectError(await post(a, '/chat/pin', { chatId: contacts[3] }), 409, /at most 3 chats can be pinned/);
    const list = expectStatus(await get(a, '/chat/list'), 200);
    expect(list.items.slice(0, 3).every((c: any) => c.pinned)).toBe(true);
    expect(list.items[3].chatId).toBe(`${contacts[3]}@s.whatsapp.net`);
    expect(expectStatus(await get(a, '/chat/list?pinned=true'), 200).total).toBe(3);

    const archived = expectStatus(await post(a, '/chat/archive', { chatId: contacts[0] }), 200);
    expect(archived).toMatchObject({ archived: true, pinned: false });
    expectError(await post(a, '/chat/pin', { chatId: contacts[0] }), 409, /archived chat cannot be pinned/);
    expect(expectStatus(await get(a, '/chat/list?archived=true'), 200).items.map((c: any) => c.chatId)).toEqual([
      `${contacts[0]}@s.whatsapp.net`,
    ]);
    expect(expectStatus(await get(a, '/chat/list?archived=false'), 200).total).toBe(3);
    expect(expectStatus(await post(a, '/chat/unpin', { chatId: contacts[1] }), 200).pinned).toBe(false);
    expect(expectStatus(await post(a, '/chat/unarchive', { chatId: contacts[0] }), 200).archived).toBe(false);

    const before = Math.floor(Date.now() / 1000);
    const muted = expectStatus(await post(a, '/chat/mute', { chatId: contacts[1], duration: 3600 }), 200);
    expect(muted.muted).toBe(true);
    expect(muted.mutedUntil).toBeGreaterThanOrEqual(before + 3600);
    expect(muted.mutedUntil).toBeLessThanOrEqual(before + 3602);
    expect(expectStatus(await post(a, '/chat/mute', { chatId: contacts[1] }), 200)).toMatchObject({ muted: true, mutedUntil: null });
    expectError(await post(a, '/chat/mute', { chatId: contacts[1], duration: 5 }), 400, /duration/);

    // A new message brings an archived chat back, unless the chat is muted.
    await post(a, '/chat/archive', { chatId: contacts[1] });
    await post(a, '/chat/archive', { chatId: contacts[2] });
    await contactSays(gw, contacts[1]!, a.number!, 'still muted');
    await contactSays(gw, contacts[2]!, a.number!, 'back again');
    expect(expectStatus(await get(a, `/chat/info?chatId=${contacts[1]}`), 200).archived).toBe(true);
    expect(expectStatus(await get(a, `/chat/info?chatId=${contacts[2]}`), 200).archived).toBe(false);
    expect(expectStatus(await post(a, '/chat/unmute', { chatId: contacts[1] }), 200)).toMatchObject({ muted: false, mutedUntil: null });

    expect(expectStatus(await get(a, '/chat/list?kind=group'), 200).total).toBe(0);
    expect(expectStatus(await get(a, '/chat/list?limit=2&offset=1'), 200)).toMatchObject({ total: 4, offset: 1, limit: 2 });
  });

  it('marks chats unread and read; reading sends receipts to the senders; writing reads the chat', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const first = expectStatus(await post(b, '/send/text', { number: a.number, text: 'one' }), 200);
    const second = expectStatus(await post(b, '/send/text', { number: a.number, text: 'two' }), 200);
    expect(expectStatus(await get(a, `/chat/info?chatId=${b.number}`), 200).unreadCount).toBe(2);
    expect(expectStatus(await get(a, '/chat/list?unread=true'), 200).total).toBe(1);

    expect(expectStatus(await post(a, '/chat/mark-unread', { chatId: b.number }), 200)).toMatchObject({
      markedUnread: true,
      unreadCount: 2,
    });
    const read = expectStatus(await post(a, '/chat/mark-read', { chatId: b.number }), 200);
    expect(read).toMatchObject({ markedUnread: false, unreadCount: 0 });
    expect(expectStatus(await get(a, '/chat/list?unread=true'), 200).total).toBe(0);
    for (const sent of [first, second]) {
      const receipt = await events.next(b.id, 'READ_RECEIPT', (e) => e.data.key.id === sent.key.id);
      expect(receipt.data).toMatchObject({ key: { remoteJid: `${a.number}@s.whatsapp.net`, fromMe: true }, receipt: 'read' });
    }

    // B's own sending made its chat with A read.
    const bChat = expectStatus(await get(b, `/chat/info?chatId=${a.number}`), 200);
    expect(bChat).toMatchObject({ unreadCount: 0, lastMessage: { key: { fromMe: true }, message: { conversation: 'two' } } });
    expect(expectStatus(await get(b, '/user/contacts'), 200).items.map((c: any) => c.number)).toContain(a.number);
  });

  it('clears and deletes chats', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const contact = uniqueNumber();
    await contactSays(gw, contact, a.number!, 'to be cleared');
    const cleared = expectStatus(await post(a, '/chat/clear', { chatId: contact }), 200);
    expect(cleared).toMatchObject({ unreadCount: 0, lastMessage: null });
    expect(expectStatus(await get(a, `/chat/history?chatId=${contact}`), 200)).toMatchObject({ items: [], total: 0 });

    expect(expectStatus(await post(a, '/chat/delete', { chatId: contact }), 200)).toEqual({
      chatId: `${contact}@s.whatsapp.net`,
      deleted: true,
    });
    expectError(await get(a, `/chat/info?chatId=${contact}`), 404, /not found/);
    expect(expectStatus(await get(a, '/chat/list'), 200).total).toBe(0);
    expectError(await post(a, '/chat/delete', { chatId: contact }), 404, /not found/);
    // A new message starts the chat again.
    await contactSays(gw, contact, a.number!, 'again');
    expect(expectStatus(await get(a, `/chat/history?chatId=${contact}`), 200).total).toBe(1);
  });

  it('asks the phone for a chat history, which arrives as HISTORY_SYNC', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const contact = uniqueNumber();
    for (const text of ['m1', 'm2', 'm3']) await contactSays(gw, contact, a.number!, text);
    expect(expectStatus(await post(a, '/chat/history/request', { chatId: contact, count: 2 }), 200)).toEqual({
      chatId: `${contact}@s.whatsapp.net`,
      requested: 2,
    });
    const sync = await events.next(a.id, 'HISTORY_SYNC');
    expect(sync.data).toMatchObject({ syncType: 'ON_DEMAND', chatId: `${contact}@s.whatsapp.net`, progress: 100 });
    expect(sync.data.messages.map((m: any) => textOf(m.message))).toEqual(['m2', 'm3']);
    expectError(await post(a, '/chat/history/request', { chatId: contact, count: 0 }), 400, /count/);
  });

  it('shows the whole history of a chat longer than the messages the sandbox keeps in memory; old messages still take edits, deletions and labels', async () => {
    // The sandbox keeps the latest LIMITS.messagesPerChat messages of a chat in memory and reads
    // older ones from the message store: every view must still see the whole chat.
    const count = LIMITS.messagesPerChat + 12;
    const a = await connectedInstance(gw, uniqueNumber());
    const shop = await connectedInstance(gw, uniqueNumber());
    await sandboxAccount(gw, { number: shop.number, business: true });
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      ids.push(expectStatus(await post(a, '/send/text', { number: shop.number, text: `m${i}.` }), 200).key.id);
    }
    await events.next(shop.id, 'MESSAGE', (e) => e.data.key.id === ids.at(-1));
    const texts = (page: any) => page.items.map((m: any) => textOf(m.message) ?? null);
    const expected = (from: number, n: number) => Array.from({ length: n }, (_, i) => `m${from - i}.`);

    const newest = expectStatus(await get(shop, `/chat/history?chatId=${a.number}&limit=5`), 200);
    expect(newest.total).toBe(count);
    expect(texts(newest)).toEqual(expected(count - 1, 5));
    // A page across the end of what is in memory, and the oldest page.
    const across = expectStatus(await get(shop, `/chat/history?chatId=${a.number}&offset=${LIMITS.messagesPerChat - 3}&limit=6`), 200);
    expect(texts(across)).toEqual(expected(count - LIMITS.messagesPerChat + 2, 6));
    const oldest = expectStatus(await get(shop, `/chat/history?chatId=${a.number}&offset=${count - 3}&limit=10`), 200);
    expect(oldest).toMatchObject({ total: count });
    expect(texts(oldest)).toEqual(['m2.', 'm1.', 'm0.']);
    // Search finds the chat by a message only the store still has ("m3." is no other message's text).
    expect(expectStatus(await get(shop, '/chat/search?query=m3.'), 200).items.map((c: any) => c.chatId)).toEqual([
      `${a.number}@s.whatsapp.net`,
    ]);

    // Reading the chat sends a receipt for every unread message, the oldest included.
    expect(expectStatus(await get(shop, `/chat/info?chatId=${a.number}`), 200).unreadCount).toBe(count);
    expectStatus(await post(shop, '/chat/mark-read', { chatId: a.number }), 200);
    await events.next(a.id, 'READ_RECEIPT', (e) => e.data.key.id === ids[0]);

    // The author edits and deletes its oldest messages; the other side's history shows both.
    expectStatus(await post(a, '/message/edit', { chatId: shop.number, messageId: ids[0], text: 'm0. edited' }), 200);
    expectStatus(await post(a, '/message/delete', { chatId: shop.number, messageId: ids[1] }), 200);
    await events.next(shop.id, 'MESSAGE', (e) => e.data.message.protocolMessage?.type === 'REVOKE');
    await waitFor(
      async () => {
        const page = expectStatus(await get(shop, `/chat/history?chatId=${a.number}&offset=${count - 2}&limit=2`), 200);
        return textOf(page.items[1]?.message) === 'm0. edited' && Object.keys(page.items[0]?.message ?? {}).length === 0 ? true : undefined;
      },
      10_000,
      'the edit and the deletion in the history',
    );

    // A label on a message no longer in memory.
    const label = expectStatus(await post(shop, '/label/create', { name: 'Old', color: 1 }), 201);
    expectStatus(await post(shop, '/label/apply', { labelId: label.labelId, chatId: a.number, messageId: ids[2] }), 200);
    const labelled = expectStatus(await get(shop, `/chat/history?chatId=${a.number}&offset=${count - 3}&limit=1`), 200);
    expect(labelled.items[0]).toMatchObject({ key: { id: ids[2] }, labels: [label.labelId] });
    expectError(
      await post(shop, '/label/apply', { labelId: label.labelId, chatId: a.number, messageId: 'NOPE' }),
      404,
      /message NOPE not found/,
    );

    // The phone sends the whole chat again when asked for it.
    expectStatus(await post(shop, '/chat/history/request', { chatId: a.number, count }), 200);
    const sync = await events.next(
      shop.id,
      'HISTORY_SYNC',
      (e) => e.data.syncType === 'ON_DEMAND' && e.data.chatId === `${a.number}@s.whatsapp.net`,
    );
    expect(sync.data.messages).toHaveLength(count);
    expect(textOf(sync.data.messages[0].message)).toBe('m0. edited');
    expect(textOf(sync.data.messages.at(-1).message)).toBe(`m${count - 1}.`);

    // A clear hides the older messages the store still holds.
    expectStatus(await post(shop, '/chat/clear', { chatId: a.number }), 200);
    expect(expectStatus(await get(shop, `/chat/history?chatId=${a.number}&offset=0&limit=500`), 200)).toMatchObject({
      items: [],
      total: 0,
    });
    expect(expectStatus(await get(shop, '/chat/search?query=m3.'), 200).total).toBe(0);
  });

  it('checks which numbers are on the network', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const registered = uniqueNumber();
    await sandboxAccount(gw, { number: registered });
    const unknown = uniqueNumber();
    const check = expectStatus(await get(a, `/chat/check?numbers=${b.number}&numbers=${registered}&numbers=${unknown}`), 200);
    expect(check.items).toEqual([
      { number: b.number, jid: `${b.number}@s.whatsapp.net`, exists: true },
      { number: registered, jid: `${registered}@s.whatsapp.net`, exists: true },
      { number: unknown, jid: `${unknown}@s.whatsapp.net`, exists: false },
    ]);
    expect(expectStatus(await get(a, `/chat/check?numbers=${unknown}`), 200).items).toHaveLength(1);
    expectError(await get(a, '/chat/check?numbers=12ab'), 400, /numbers/);
  });

  it('refuses instances that are not connected, the admin key, and unknown fields', async () => {
    const idle = await createInstance(gw);
    expectError(await gw.api('GET', '/api/v1/chat/list', { key: idle.token }), 409, /not connected/);
    expectError(await gw.api('POST', '/api/v1/chat/pin', { key: idle.token, body: { chatId: uniqueNumber() } }), 409, /not connected/);
    expectError(await gw.api('GET', '/api/v1/chat/list', { key: gw.adminKey }), 403, /instance token/);
    expectError(await gw.api('GET', '/api/v1/chat/list'), 401, /invalid api key/);
    const a = await connectedInstance(gw, uniqueNumber());
    expectError(await post(a, '/chat/pin', { chatId: uniqueNumber(), extra: 1 }), 400, /extra is not an allowed field/);
  });
});

describe('capabilities a driver lacks', () => {
  it('answer 501 naming the operation and the network', async () => {
    const session = { send: () => Promise.reject(new Error('unused')) } as unknown as Session;
    const sessions = { connected: () => Promise.resolve(session) } as unknown as SessionRegistry;
    const instance = { network: 'whatsapp' } as Instance;
    const error = await capabilityOf(sessions, instance, 'groups').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      status: 501,
      code: 'not_supported',
      message: 'group management is not supported by the whatsapp driver yet',
    });
  });
});
