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
