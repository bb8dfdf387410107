import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  createInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
} from '../../../test/support/gateway.js';
import { initialHistoryParts, type HistoryChat } from './chats.js';

// jsqr is CommonJS with a typed default export; take the function whichever way the loader hands it over.
type Decode = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;
const jsQR: Decode = typeof jsQRModule === 'function' ? jsQRModule : (jsQRModule as unknown as { default: Decode }).default;

function decodeQr(dataUrl: string): string | undefined {
  expect(dataUrl.startsWith('data:image/png;base64,')).toBe(true);
  const png = PNG.sync.read(Buffer.from(dataUrl.slice('data:image/png;base64,'.length), 'base64'));
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data;
}

describe('sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;

  beforeAll(async () => {
    gw = await startGateway({ env: { SANDBOX_QR_INTERVAL_MS: '60000', SANDBOX_RECONNECT_DELAY_MS: '20' } });
    events = recordEvents(gw);
  });
  afterAll(async () => gw.stop());

  it('pairs by QR: connect shows a real, scannable QR; a scan connects the instance with its number', async () => {
    const a = await createInstance(gw);
    expect((await gw.api('GET', '/api/v1/instance/qr', { key: a.token })).status).toBe(404);

    const connect = await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
    expect(connect.status).toBe(200);
    expect(connect.body.status).toBe('QRCODE');

    const qrEvent = await events.next(a.id, 'QRCODE');
    expect(qrEvent).toMatchObject({ event: 'QRCODE', instanceId: a.id, instanceName: a.name });
    expect(qrEvent.eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Date(qrEvent.timestamp).toISOString()).toBe(qrEvent.timestamp);
    expect(decodeQr(qrEvent.data.qrcode)).toBe(qrEvent.data.code);

    const qr = await gw.api('GET', '/api/v1/instance/qr', { key: a.token });
    expect(qr.status).toBe(200);
    expect(qr.body.qrcode).toBe(qrEvent.data.qrcode);
    expect(qr.body.base64).toBe(qr.body.qrcode.split(',')[1]);
    expect(qr.body.attempt).toBe(1);
    expect(Date.parse(qr.body.expiresAt)).toBeGreaterThan(Date.now());
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body.status).toBe('QRCODE');

    const number = uniqueNumber();
    const scan = await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number } });
    expect(scan.status).toBe(200);
    expect(scan.body).toEqual({ instanceId: a.id, status: 'CONNECTED', number });

    const connection = await events.next(a.id, 'CONNECTION', (e) => e.data.status === 'CONNECTED');
    expect(connection.data).toMatchObject({ status: 'CONNECTED', number });
    const status = await gw.api('GET', '/api/v1/instance/status', { key: a.token });
    expect(status.body).toEqual({
      instanceId: a.id,
      instanceName: a.name,
      status: 'CONNECTED',
      number,
      health: { score: 100, reasons: [] },
    });
    expect((await gw.api('GET', '/api/v1/instance/qr', { key: a.token })).status).toBe(409);
    // Statuses went created -> CONNECTING -> QRCODE -> CONNECTED.
    expect(events.of(a.id, 'CONNECTION').map((e) => e.data.status)).toEqual(['CONNECTING', 'QRCODE', 'CONNECTED']);
  });

  it('refuses a scan without a QR, of a number in use, or of an unknown instance', async () => {
    const a = await createInstance(gw);
    const noQr = await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number: uniqueNumber() } });
    expect(noQr.status).toBe(409);
    expect(noQr.body.error).toMatch(/no QR code/);
    const taken = await connectedInstance(gw, uniqueNumber());
    await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
    const inUse = await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number: taken.number } });
    expect(inUse.status).toBe(409);
    expect(inUse.body.error).toMatch(/already linked/);
    const unknown = await gw.api('POST', '/api/v1/sandbox/scan', {
      key: gw.adminKey,
      body: { instanceId: 'nope', number: uniqueNumber() },
    });
    expect(unknown.status).toBe(404);
    const tokenNotAdmin = await gw.api('POST', '/api/v1/sandbox/scan', {
      key: a.token,
      body: { instanceId: a.id, number: uniqueNumber() },
    });
    expect(tokenNotAdmin.status).toBe(403);
  });

  it('pairs by an 8-digit code confirmed on the phone', async () => {
    const a = await createInstance(gw);
    const number = uniqueNumber();
    const pair = await gw.api('POST', '/api/v1/instance/pair', { key: a.token, body: { number } });
    expect(pair.status).toBe(200);
    expect(pair.body.pairingCode).toMatch(/^\d{8}$/);
    expect(pair.body.number).toBe(number);

    const wrongPhone = await gw.api('POST', '/api/v1/sandbox/pair', {
      key: gw.adminKey,
      body: { number: uniqueNumber(), code: pair.body.pairingCode },
    });
    expect(wrongPhone.status).toBe(409);
    const badCode = await gw.api('POST', '/api/v1/sandbox/pair', { key: gw.adminKey, body: { number, code: '1234567' } });
    expect(badCode.status).toBe(400);

    const ok = await gw.api('POST', '/api/v1/sandbox/pair', { key: gw.adminKey, body: { number, code: pair.body.pairingCode } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ instanceId: a.id, status: 'CONNECTED', number });
    const reused = await gw.api('POST', '/api/v1/sandbox/pair', { key: gw.adminKey, body: { number, code: pair.body.pairingCode } });
    expect(reused.status).toBe(404);
    expect((await gw.api('POST', '/api/v1/instance/pair', { key: a.token, body: { number } })).status).toBe(409);
    expect((await gw.api('POST', '/api/v1/instance/pair', { key: a.token, body: { number: 'abc' } })).status).toBe(400);
  });

  it('sends text between two sandbox instances: reply key, SEND_MESSAGE, and the receiver MESSAGE as SPEC shows', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: 'hello b' } });
    expect(sent.status).toBe(200);
    expect(sent.body.key).toEqual({ remoteJid: `${b.number}@s.whatsapp.net`, fromMe: true, id: expect.any(String) });
    expect(sent.body.status).toBe('SENT');
    expect(Number.isInteger(sent.body.messageTimestamp)).toBe(true);

    const confirmation = await events.next(a.id, 'SEND_MESSAGE', (e) => e.data.key.id === sent.body.key.id);
    expect(confirmation.data.message).toEqual({ conversation: 'hello b' });

    const received = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === sent.body.key.id);
    expect(received.data).toEqual({
      key: { remoteJid: `${a.number}@s.whatsapp.net`, fromMe: false, id: sent.body.key.id },
      pushName: a.name,
      message: { conversation: 'hello b' },
      messageTimestamp: sent.body.messageTimestamp,
    });

    const back = await gw.api('POST', '/api/v1/send/text', { key: b.token, body: { number: a.number, text: 'hi a' } });
    expect(back.status).toBe(200);
    // WhatsApp Web's shape, in the order the messages were sent (stored rows append to the key's index).
    expect(sent.body.key.id).toMatch(/^3EB0[0-9A-F]{32}$/);
    expect(back.body.key.id > sent.body.key.id).toBe(true);
    await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === back.body.key.id && e.data.message.conversation === 'hi a');
  });

  it('refuses to send from an instance that is not connected (409, no hang)', async () => {
    const a = await createInstance(gw);
    const res = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'x' } });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/not connected/);
  });

  it('lets virtual contacts message, read, show presence, type and call', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const contact = uniqueNumber();
    await gw.api('POST', '/api/v1/sandbox/contacts', { key: gw.adminKey, body: { number: contact, pushName: 'Maria' } });
    const msg = await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from: contact, to: a.number, text: 'oi' } });
    expect(msg.status).toBe(200);
    const message = await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === msg.body.key.id);
    expect(message.data).toMatchObject({
      pushName: 'Maria',
      message: { conversation: 'oi' },
      key: { remoteJid: `${contact}@s.whatsapp.net`, fromMe: false },
    });

    const unknown = await gw.api('POST', '/api/v1/sandbox/messages', {
      key: gw.adminKey,
      body: { from: contact, to: uniqueNumber(), text: 'x' },
    });
    expect(unknown.status).toBe(404);

    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: contact, text: 'read me' } });
    const read = await gw.api('POST', '/api/v1/sandbox/read', {
      key: gw.adminKey,
      body: { from: contact, to: a.number, messageIds: [sent.body.key.id] },
    });
    expect(read.body).toEqual({ receipts: 1 });
    const receipt = await events.next(a.id, 'READ_RECEIPT');
    expect(receipt.data).toMatchObject({
      key: { remoteJid: `${contact}@s.whatsapp.net`, fromMe: true, id: sent.body.key.id },
      receipt: 'read',
    });

    await gw.api('POST', '/api/v1/sandbox/presence', { key: gw.adminKey, body: { from: contact, to: a.number, presence: 'available' } });
    expect((await events.next(a.id, 'PRESENCE')).data).toEqual({ id: `${contact}@s.whatsapp.net`, presence: 'available' });
    await gw.api('POST', '/api/v1/sandbox/presence', { key: gw.adminKey, body: { from: contact, to: a.number, presence: 'composing' } });
    expect((await events.next(a.id, 'CHAT_PRESENCE')).data).toMatchObject({
      remoteJid: `${contact}@s.whatsapp.net`,
      presence: 'composing',
    });
    const call = await gw.api('POST', '/api/v1/sandbox/calls', { key: gw.adminKey, body: { from: contact, to: a.number, isVideo: true } });
    expect((await events.next(a.id, 'CALL')).data).toMatchObject({
      id: call.body.callId,
      from: `${contact}@s.whatsapp.net`,
      status: 'offer',
      isVideo: true,
    });
  });

  it('reconnects by itself after a dropped connection and says so in CONNECTION events', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const drop = await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } });
    expect(drop.body).toEqual({ instanceId: a.id, status: 'DISCONNECTED' });
    await events.next(a.id, 'CONNECTION', (e) => e.data.reason === 'reconnected');
    const statuses = events.of(a.id, 'CONNECTION').map((e) => `${e.data.status}:${e.data.reason}`);
    expect(statuses.slice(-3)).toEqual(['DISCONNECTED:connection_lost', 'CONNECTING:reconnecting', 'CONNECTED:reconnected']);
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body.status).toBe('CONNECTED');
    const again = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'back' } });
    expect(again.status).toBe(200);
  });

  it('forces a reconnection through the admin route', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const res = await gw.api('POST', `/api/v1/instance/reconnect/${a.id}`, { key: gw.adminKey });
    expect(res.status).toBe(200);
    await events.next(a.id, 'CONNECTION', (e) => e.data.reason === 'reconnected');
    expect(events.of(a.id, 'CONNECTION').some((e) => e.data.reason === 'reconnect_requested')).toBe(true);
    expect((await gw.api('POST', `/api/v1/instance/reconnect/nope`, { key: gw.adminKey })).status).toBe(404);
    expect((await gw.api('POST', `/api/v1/instance/reconnect/${a.id}`, { key: a.token })).status).toBe(403);
  });

  it('logs out from the phone side and from the API; a new pairing is needed', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const phone = await gw.api('POST', '/api/v1/sandbox/logout', { key: gw.adminKey, body: { instanceId: a.id } });
    expect(phone.body).toEqual({ instanceId: a.id, status: 'LOGGED_OUT' });
    const event = await events.next(a.id, 'CONNECTION', (e) => e.data.status === 'LOGGED_OUT');
    expect(event.data.reason).toBe('logged_out_from_phone');
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body).toEqual({
      instanceId: a.id,
      instanceName: a.name,
      status: 'LOGGED_OUT',
      health: { score: 0, reasons: ['logged out: logged_out_from_phone (-100)', '1 connection loss(es) in 15 min (-10)'] },
    });
    expect((await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'x' } })).status).toBe(409);

    const reconnect = await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
    expect(reconnect.body.status).toBe('QRCODE');
    const number = uniqueNumber();
    await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number } });
    const api = await gw.api('POST', '/api/v1/instance/logout', { key: a.token });
    expect(api.body.status).toBe('LOGGED_OUT');
    expect((await events.next(a.id, 'CONNECTION', (e) => e.data.reason === 'logged_out')).data.status).toBe('LOGGED_OUT');
    // The number is free again for another instance.
    const b = await connectedInstance(gw, number);
    expect(b.number).toBe(number);
  });

  it('sends a number paired again its chats and recent messages as HISTORY_SYNC INITIAL_BOOTSTRAP, by QR and by pairing code', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const contact = uniqueNumber();
    const texts = (sync: any) => sync.data.messages.map((m: any) => m.message.conversation);
    const send = async (from: typeof a, to: typeof b, text: string) => {
      const sent = await gw.api('POST', '/api/v1/send/text', { key: from.token, body: { number: to.number, text } });
      expect(sent.status).toBe(200);
      await events.next(to.id, 'MESSAGE', (e) => e.data.key.id === sent.body.key.id);
      return sent.body.key.id as string;
    };
    await send(a, b, 'one');
    await send(b, a, 'two');
    await send(a, b, 'three');
    const fromContact = await gw.api('POST', '/api/v1/sandbox/messages', {
      key: gw.adminKey,
      body: { from: contact, to: a.number, text: 'four' },
    });
    await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === fromContact.body.key.id);
    // Fresh accounts have nothing to sync: their events up to these messages hold no HISTORY_SYNC.
    expect(events.of(a.id, 'HISTORY_SYNC')).toEqual([]);
    expect(events.of(b.id, 'HISTORY_SYNC')).toEqual([]);

    expect((await gw.api('POST', '/api/v1/instance/logout', { key: a.token })).body.status).toBe('LOGGED_OUT');

    // The number is linked again, to another instance, by QR.
    const c = await connectedInstance(gw, a.number!);
    const last = await events.next(c.id, 'HISTORY_SYNC', (e) => e.data.progress === 100);
    const syncs = events.of(c.id, 'HISTORY_SYNC');
    expect(syncs).toEqual([last]);
    // CONNECTED first, then the phone's history, as WhatsApp delivers it.
    const order = events.of(c.id).map((e) => (e.event === 'CONNECTION' ? e.data.status : e.event));
    expect(order.slice(-2)).toEqual(['CONNECTED', 'HISTORY_SYNC']);
    expect(last.data).toMatchObject({ syncType: 'INITIAL_BOOTSTRAP', progress: 100, isLatest: true, part: 1, parts: 1 });
    const bJid = `${b.number}@s.whatsapp.net`;
    const contactJid = `${contact}@s.whatsapp.net`;
    expect(last.data.chats).toEqual(
      expect.arrayContaining([
        { id: bJid, name: b.name, unreadCount: 0, conversationTimestamp: expect.any(Number), archived: false },
        { id: contactJid, name: contact, unreadCount: 1, conversationTimestamp: expect.any(Number), archived: false },
      ]),
    );
    expect(last.data.chats).toHaveLength(2);
    expect(last.data.contacts).toEqual(
      expect.arrayContaining([
        { id: bJid, name: b.name },
        { id: contactJid, name: contact },
      ]),
    );
    const ofChat = (jid: string) => ({ ...last, data: { messages: last.data.messages.filter((m: any) => m.key.remoteJid === jid) } });
    expect(texts(ofChat(bJid))).toEqual(['one', 'two', 'three']);
    expect(ofChat(bJid).data.messages.map((m: any) => m.key.fromMe)).toEqual([true, false, true]);
    expect(texts(ofChat(contactJid))).toEqual(['four']);

    // The chats are the new instance's now, and its message store keeps the synced messages.
    const found = await gw.api('GET', `/api/v1/message/find?chatId=${b.number}`, { key: c.token });
    expect(found.status).toBe(200);
    // Sent within one second: compared as a set.
    expect(found.body.items.map((m: any) => m.message.conversation).sort()).toEqual(['one', 'three', 'two']);
    const list = await gw.api('GET', '/api/v1/chat/list', { key: c.token });
    expect(list.status).toBe(200);
    expect(list.body.items.map((chat: any) => chat.chatId).sort()).toEqual([bJid, contactJid].sort());
    expect(list.body.items.find((chat: any) => chat.chatId === bJid).lastMessage.message).toEqual({ conversation: 'three' });

    // Back to the first instance, by pairing code: the same history again, with what came since.
    await send(b, c, 'five');
    await gw.api('POST', '/api/v1/instance/logout', { key: c.token });
    const pair = await gw.api('POST', '/api/v1/instance/pair', { key: a.token, body: { number: a.number } });
    expect(pair.status).toBe(200);
    const paired = await gw.api('POST', '/api/v1/sandbox/pair', {
      key: gw.adminKey,
      body: { number: a.number, code: pair.body.pairingCode },
    });
    expect(paired.status).toBe(200);
    const again = await events.next(a.id, 'HISTORY_SYNC', (e) => e.data.progress === 100);
    expect(again.data.syncType).toBe('INITIAL_BOOTSTRAP');
    expect(texts({ data: { messages: again.data.messages.filter((m: any) => m.key.remoteJid === bJid) } })).toEqual([
      'one',
      'two',
      'three',
      'five',
    ]);
  });
});

describe('sandbox initial history parts', () => {
  const chat = (id: string, count: number): HistoryChat => ({
    id: `${id}@s.whatsapp.net`,
    name: id,
    unreadCount: 0,
    conversationTimestamp: 1_700_000_000,
    archived: false,
    messages: Array.from({ length: count }, (_, i) => ({
      key: { remoteJid: `${id}@s.whatsapp.net`, fromMe: false, id: `${id}-${i}` },
      message: { conversation: String(i) },
      messageTimestamp: 1_700_000_000 + i,
      labels: [],
    })),
  });
  const limits = { chats: 4, messagesPerChat: 3, messagesPerEvent: 5, chatsPerEvent: 2 };

  it('keeps the latest messages of each chat, whole chats per part, progress up to 100', () => {
    const parts = initialHistoryParts([chat('1', 10), chat('2', 2), chat('3', 1), chat('4', 0), chat('5', 4)], limits);
    expect(parts.map((p) => p.chats!.map((c) => c.id.split('@')[0]))).toEqual([
      ['1', '2'],
      ['3', '4'],
    ]);
    expect(parts.map((p) => [p.part, p.parts, p.progress, p.syncType])).toEqual([
      [1, 2, 50, 'INITIAL_BOOTSTRAP'],
      [2, 2, 100, 'INITIAL_BOOTSTRAP'],
    ]);
    // Chat 1: its last three messages only; chat 5 is beyond the chat bound.
    expect(parts[0]!.messages.map((m) => m.key.id)).toEqual(['1-7', '1-8', '1-9', '2-0', '2-1']);
    expect(parts[1]!.messages.map((m) => m.key.id)).toEqual(['3-0']);
    expect(parts[0]!.chats![0]).toEqual({
      id: '1@s.whatsapp.net',
      name: '1',
      unreadCount: 0,
      conversationTimestamp: 1_700_000_000,
      archived: false,
    });
  });

  it('starts a new part when the messages would not fit, and sends nothing without chats', () => {
    const parts = initialHistoryParts([chat('1', 3), chat('2', 3), chat('3', 3)], { ...limits, chatsPerEvent: 10 });
    expect(parts.map((p) => p.messages.length)).toEqual([3, 3, 3]);
    expect(parts.map((p) => p.progress)).toEqual([33, 67, 100]);
    expect(initialHistoryParts([], limits)).toEqual([]);
  });
});

describe('sandbox QR expiry', () => {
  it('renews the QR and gives up after the configured attempts', async () => {
    const gw = await startGateway({ env: { SANDBOX_QR_INTERVAL_MS: '30', SANDBOX_QR_MAX_ATTEMPTS: '3' } });
    const events = recordEvents(gw);
    try {
      const a = await createInstance(gw);
      await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
      const gaveUp = await events.next(a.id, 'CONNECTION', (e) => e.data.reason === 'qr_attempts_exhausted');
      expect(gaveUp.data.status).toBe('DISCONNECTED');
      const qrs = events.of(a.id, 'QRCODE');
      expect(qrs.map((e) => e.data.attempt)).toEqual([1, 2, 3]);
      expect(new Set(qrs.map((e) => e.data.code)).size).toBe(3);
      expect((await gw.api('GET', '/api/v1/instance/qr', { key: a.token })).status).toBe(404);
      expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body.status).toBe('DISCONNECTED');
      // Connecting again starts a fresh pairing.
      await gw.api('POST', '/api/v1/instance/connect', { key: a.token });
      await waitFor(() => (events.of(a.id, 'QRCODE').length > 3 ? true : undefined));
    } finally {
      await gw.stop();
    }
  });
});
