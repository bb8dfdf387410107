/**
 * The connection policy through Baileys itself: the driver's real socket talks to a local server
 * that speaks WhatsApp's wire protocol (fixtures/fake-wa-server.ts) and closes the way WhatsApp does
 * for each reason code. Reconnect timers are fired by hand: no assertion depends on time.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { Storage } from '../../storage/db.js';
import type { WhatsAppDriver } from './driver.js';
import { Curve } from 'baileys';
import { FakeWaServer, trustTestRoot, type FakeConnection } from './fixtures/fake-wa-server.js';
import { ManualTimers, RecordingHost, storageWithInstance, testDriver } from './fixtures/harness.js';
import type { WhatsAppSession, WhatsAppSettings } from './session.js';

const PHONE = '5511999999999';

let server: FakeWaServer;
let url: string;
let storage: Storage;
let addInstance: () => Promise<string>;
const drivers: WhatsAppDriver[] = [];

beforeAll(async () => {
  server = new FakeWaServer();
  url = await server.start();
  ({ storage, addInstance } = await storageWithInstance());
});

afterEach(async () => {
  for (const driver of drivers.splice(0)) await driver.stop();
  server.onClient = undefined;
  server.qrRefs = 3;
  server.preKeysOnServer = 100;
});

afterAll(async () => {
  await server.stop();
  await storage.close();
});

interface Setup {
  instanceId: string;
  host: RecordingHost;
  timers: ManualTimers;
  driver: WhatsAppDriver;
  session: WhatsAppSession;
}

async function setup(
  options: { host?: RecordingHost; instanceId?: string; proxyUrl?: string; settings?: Partial<WhatsAppSettings> } = {},
): Promise<Setup> {
  const instanceId = options.instanceId ?? (await addInstance());
  const host = options.host ?? new RecordingHost(instanceId);
  const timers = new ManualTimers();
  const driver = testDriver(storage, url, timers, options.proxyUrl ? { proxyUrl: options.proxyUrl } : {}, options.settings ?? {});
  drivers.push(driver);
  return { instanceId, host, timers, driver, session: driver.open(host) };
}

/** Waits (without a deadline of its own) until the condition holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 2));
}

/** Pairs a fresh instance by QR, as a phone scanning it would (after `beforeScan`), and waits for CONNECTED. */
async function pairByQr(s: Setup, beforeScan: () => Promise<void> = async () => undefined): Promise<FakeConnection> {
  const registering = server.nextClient();
  await s.session.connect();
  const connection = await registering;
  const qr = s.session.currentQr();
  expect(qr).toBeDefined();
  await beforeScan();
  expect(s.session.currentQr()).toEqual(qr);
  const loggingIn = server.nextClient();
  await connection.pairSuccess(qr!.code, `${PHONE}:7@s.whatsapp.net`, '200000000000007:7@lid');
  await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
  await connection.streamError('515');
  const login = await loggingIn;
  await s.host.connection('CONNECTED');
  return login;
}

/** A linked instance (paired earlier), connected. */
async function linked(): Promise<Setup & { connection: FakeConnection }> {
  const s = await setup();
  const connection = await pairByQr(s);
  return { ...s, connection };
}

describe('pairing', () => {
  it('offers QR codes as QRCODE events and currentQr, then pairs: 515 restart, login, CONNECTED with the number', async () => {
    const s = await setup();
    const registering = server.nextClient();
    await s.session.connect();
    const connection = await registering;
    expect(connection.kind).toBe('registration');

    const qrEvent = await s.host.next((e) => e.type === 'QRCODE');
    expect(qrEvent.data.qrcode).toMatch(/^data:image\/png;base64,/);
    expect(qrEvent.data.code).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#ref-1-/);
    expect(qrEvent.data.attempt).toBe(1);
    expect(s.session.currentQr()?.code).toBe(qrEvent.data.code);

    const loggingIn = server.nextClient();
    await connection.pairSuccess(String(qrEvent.data.code), `${PHONE}:7@s.whatsapp.net`, '200000000000007:7@lid');
    await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
    await connection.streamError('515');
    const login = await loggingIn;
    expect(login.kind).toBe('login');
    expect(login.username).toBe(PHONE);

    const connected = await s.host.connection('CONNECTED');
    expect(connected.data).toEqual({ status: 'CONNECTED', number: PHONE, reason: 'paired' });
    expect(s.host.connectionLog()).toEqual(['CONNECTING', 'QRCODE', 'CONNECTING:restart_required', 'CONNECTED:paired']);
    // 515 reconnects at once: no timer involved.
    expect(s.timers.pending().filter((t) => t.ms !== 10_000)).toEqual([]);
    expect(s.session.currentQr()).toBeUndefined();
    const creds = await s.driver.store.loadCreds(s.instanceId);
    expect(creds?.me?.id).toBe(`${PHONE}:7@s.whatsapp.net`);
    expect(creds?.account).toBeTruthy();
  });

  it('refuses a server whose certificate chain another root signed: no QR, the socket is closed', async () => {
    // Baileys' own signature check accepted any well-formed signature (signatures.ts).
    trustTestRoot(Curve.generateKeyPair().public);
    try {
      const s = await setup();
      await s.session.connect();
      // The handshake fails on the certificate: the socket closes before any QR is offered.
      const first = await s.host.next((e) => e.type === 'QRCODE' || (e.type === 'CONNECTION' && e.data.status === 'DISCONNECTED'));
      expect(first.type).toBe('CONNECTION');
      expect(s.host.events.filter((e) => e.type === 'QRCODE')).toEqual([]);
    } finally {
      trustTestRoot();
    }
  });

  it('a restarted gateway resumes the linked session from the database without a QR', async () => {
    const first = await linked();
    await first.driver.stop();
    const before = server.connections.length;

    const host = new RecordingHost(first.instanceId, 'wa-test', 'CONNECTED', PHONE);
    const loggingIn = server.nextClient();
    const second = await setup({ instanceId: first.instanceId, host });
    await second.session.connect();
    const login = await loggingIn;
    expect(login.kind).toBe('login');
    expect(login.username).toBe(PHONE);
    await login.waitForNode((node) => node.tag === 'iq' && node.attrs.xmlns === 'passive');
    expect(server.connections.length).toBe(before + 1);
    // Resumed as it was: no QR, no status churn.
    expect(host.events.filter((e) => e.type === 'QRCODE')).toEqual([]);
    expect(second.session.currentQr()).toBeUndefined();
  });

  it('gives up after the configured number of QR codes with qr_attempts_exhausted', async () => {
    server.qrRefs = 10;
    const s = await setup({ settings: { qrMaxAttempts: 2, qrTimeoutMs: 20 } });
    await s.session.connect();
    await s.host.connection('DISCONNECTED', 'qr_attempts_exhausted');
    expect(s.host.events.filter((e) => e.type === 'QRCODE').map((e) => e.data.attempt)).toEqual([1, 2]);
    expect(s.timers.pending().filter((t) => t.ms !== 10_000)).toEqual([]);
    expect(s.session.currentQr()).toBeUndefined();
  });

  it('stops when WhatsApp runs out of QR refs (408 after unscanned QRs), without reconnecting', async () => {
    server.qrRefs = 2;
    const s = await setup({ settings: { qrTimeoutMs: 20 } });
    await s.session.connect();
    await s.host.connection('DISCONNECTED', 'qr_attempts_exhausted');
    expect(s.host.events.filter((e) => e.type === 'QRCODE')).toHaveLength(2);
    expect(s.timers.pending().filter((t) => t.ms !== 10_000)).toEqual([]);
  });

  it('asks for a pairing code: 8 digits, sent to WhatsApp for the given number', async () => {
    const s = await setup();
    const registering = server.nextClient();
    const code = await s.session.requestPairingCode(PHONE);
    const connection = await registering;
    expect(code).toMatch(/^[1-9]{8}$/);
    const hello = await connection.waitForNode(
      (node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'link_code_companion_reg',
    );
    const reg = (hello.content as { attrs: Record<string, string> }[])[0]!;
    expect(reg.attrs.jid).toBe(`${PHONE}@s.whatsapp.net`);
    expect(reg.attrs.stage).toBe('companion_hello');
  });
});

describe('reconnect policy by close code', () => {
  it('428 (socket dropped): DISCONNECTED, a backoff timer, then a new socket and CONNECTED', async () => {
    const s = await linked();
    const mark = s.host.events.length;
    s.connection.drop();
    await s.host.connection('DISCONNECTED', 'connection_closed', mark);
    expect(s.timers.pending()).toHaveLength(1);
    const next = server.nextClient();
    // base 1000 ms, random() = 0.5 -> 750 ms for the first attempt.
    expect(s.timers.fireLongest()).toBe(750);
    expect((await next).kind).toBe('login');
    await s.host.connection('CONNECTED', 'connected', mark);
    expect(s.host.connectionLog().slice(-3)).toEqual(['DISCONNECTED:connection_closed', 'CONNECTING:reconnecting', 'CONNECTED:connected']);
  });

  it('consecutive failures back off exponentially up to the cap (8000 ms), with jitter', async () => {
    const s = await linked();
    // From now on the server drops every login before it succeeds.
    server.onClient = async (c) => c.drop();
    s.connection.drop();
    const delays: number[] = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      await until(() => s.timers.pending().length === 1);
      const next = server.nextClient();
      delays.push(s.timers.fireLongest());
      await next;
    }
    expect(delays).toEqual([750, 1500, 3000, 6000, 6000, 6000]);
  });

  for (const [code, reason] of [
    ['408', 'connection_lost'],
    ['500', 'bad_session'],
    ['503', 'service_unavailable'],
  ] as const) {
    it(`${code} stream error: DISCONNECTED ${reason}, reconnect after backoff`, async () => {
      const s = await linked();
      const mark = s.host.events.length;
      await s.connection.streamError(code);
      await s.host.connection('DISCONNECTED', reason, mark);
      expect(s.timers.pending()).toHaveLength(1);
      const next = server.nextClient();
      s.timers.fireLongest();
      expect((await next).kind).toBe('login');
      await s.host.connection('CONNECTED', undefined, mark);
    });
  }

  it('515 on a linked session reconnects at once', async () => {
    const s = await linked();
    const mark = s.host.events.length;
    const next = server.nextClient();
    await s.connection.streamError('515');
    expect((await next).kind).toBe('login');
    await s.host.connection('CONNECTED', undefined, mark);
    expect(s.host.connectionLog().slice(-2)).toEqual(['CONNECTING:restart_required', 'CONNECTED:connected']);
    expect(s.timers.pending()).toEqual([]);
  });

  it('440 (connection replaced): reports and does not fight the other client', async () => {
    const s = await linked();
    const count = server.connections.length;
    await s.connection.streamError(undefined, { tag: 'conflict', attrs: { type: 'replaced' } });
    await s.host.connection('DISCONNECTED', 'connection_replaced');
    expect(s.timers.pending()).toEqual([]);
    expect(server.connections.length).toBe(count);
    // Creds are kept: connecting again later logs in.
    expect(await s.driver.store.loadCreds(s.instanceId)).toBeDefined();
  });

  it('401 device_removed: creds and keys wiped, LOGGED_OUT with the reason, and a new QR on the next connect', async () => {
    server.preKeysOnServer = 0;
    const s = await linked();
    // Baileys uploaded a full set of pre-keys at login: they are in the database.
    await s.connection.waitForNode(
      (node) =>
        node.tag === 'iq' && node.attrs.xmlns === 'encrypt' && Array.isArray(node.content) && node.content.some((c) => c.tag === 'list'),
    );
    expect(await s.driver.store.countKeys(s.instanceId)).toBeGreaterThan(800);
    await s.connection.streamError('401', { tag: 'conflict', attrs: { type: 'device_removed' } });
    const out = await s.host.connection('LOGGED_OUT', 'device_removed');
    expect(out.data.number).toBeUndefined();
    expect(await s.driver.store.loadCreds(s.instanceId)).toBeUndefined();
    expect(await s.driver.store.countKeys(s.instanceId)).toBe(0);
    expect(s.timers.pending()).toEqual([]);

    const registering = server.nextClient();
    await s.session.connect();
    expect((await registering).kind).toBe('registration');
    await s.host.next((e) => e.type === 'QRCODE');
  });

  it('401 failure node (logged out by the network): LOGGED_OUT logged_out_from_phone', async () => {
    const s = await linked();
    await s.connection.failure('401');
    await s.host.connection('LOGGED_OUT', 'logged_out_from_phone');
    expect(await s.driver.store.loadCreds(s.instanceId)).toBeUndefined();
  });

  it('403 (banned or blocked): reported, no reconnect, creds kept', async () => {
    const s = await linked();
    await s.connection.failure('403');
    await s.host.connection('DISCONNECTED', 'banned_or_blocked');
    expect(s.timers.pending()).toEqual([]);
    expect(await s.driver.store.loadCreds(s.instanceId)).toBeDefined();
  });
});

describe('the deadline for opening a socket (connectTimeoutMs, kept by the session)', () => {
  /** A local server that accepts connections and never answers; `upgrade` also completes the WebSocket handshake. */
  async function silentServer(upgrade: boolean): Promise<{ url: string; accepted: () => number; close: () => Promise<void> }> {
    const sockets: net.Socket[] = [];
    const silent = http.createServer();
    silent.on('connection', (socket: net.Socket) => sockets.push(socket));
    // Upgrades and then ignores every frame (the Noise hello included).
    const upgrades = upgrade ? new WebSocketServer({ server: silent }) : undefined;
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    return {
      url: `ws://127.0.0.1:${(silent.address() as AddressInfo).port}/ws/chat`,
      accepted: () => sockets.length,
      close: async () => {
        for (const socket of sockets) socket.destroy();
        upgrades?.close();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      },
    };
  }

  for (const upgrade of [false, true]) {
    it(`a server that ${upgrade ? 'upgrades to WebSocket but never answers the Noise hello' : 'never answers the WebSocket upgrade'}: timed out, DISCONNECTED connection_lost, and the backoff connects again`, async () => {
      const silent = await silentServer(upgrade);
      try {
        const s = await setup({ settings: { waWebSocketUrl: silent.url, connectTimeoutMs: 200 } });
        await s.session.connect();
        await s.host.connection('DISCONNECTED', 'connection_lost');
        expect(silent.accepted()).toBe(1);
        expect(s.timers.pending()).toHaveLength(1);
        s.timers.fireLongest();
        await until(() => silent.accepted() === 2);
        await s.host.connection('DISCONNECTED', 'connection_lost', s.host.events.length);
      } finally {
        for (const driver of drivers.splice(0)) await driver.stop();
        await silent.close();
      }
    });
  }

  it('is over once a QR is shown, and once the socket is open', async () => {
    const s = await setup({ settings: { connectTimeoutMs: 200 } });
    // Each wait goes past the deadline; nothing happens if it is disarmed, so a slow machine cannot fail this.
    const pastTheDeadline = () => new Promise<void>((resolve) => setTimeout(resolve, 500));
    await pairByQr(s, pastTheDeadline);
    await pastTheDeadline();
    expect(s.host.connectionLog().filter((entry) => entry.startsWith('DISCONNECTED'))).toEqual([]);
  });
});

describe('operations', () => {
  it('logout tells WhatsApp to remove the device, wipes the auth state and reports LOGGED_OUT', async () => {
    const s = await linked();
    await s.session.logout();
    const removal = await s.connection.waitForNode(
      (node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'remove-companion-device',
    );
    expect((removal.content as { attrs: Record<string, string> }[])[0]!.attrs.jid).toBe(`${PHONE}:7@s.whatsapp.net`);
    await s.host.connection('LOGGED_OUT', 'logged_out');
    expect(await s.driver.store.loadCreds(s.instanceId)).toBeUndefined();
  });

  it('reconnect on request: DISCONNECTED reconnect_requested, a new socket, CONNECTED', async () => {
    const s = await linked();
    const mark = s.host.events.length;
    const next = server.nextClient();
    await s.session.reconnect();
    expect((await next).kind).toBe('login');
    await s.host.connection('CONNECTED', undefined, mark);
    expect(s.host.connectionLog().slice(-3)).toEqual([
      'DISCONNECTED:reconnect_requested',
      'CONNECTING:reconnecting',
      'CONNECTED:connected',
    ]);
    expect(s.connection.open).toBe(false);
  });

  it('a message the network rejects after sending becomes SEND_MESSAGE FAILED with the error code', async () => {
    const first = await linked();
    await first.driver.stop();
    // An instance whose initial history sync finished earlier: Baileys goes online without waiting
    // up to 20 s for the phone's history notification (which this server never sends).
    const creds = (await first.driver.store.loadCreds(first.instanceId))!;
    creds.accountSyncCounter = 1;
    await first.driver.store.saveCreds(first.instanceId, creds);
    const loggingIn = server.nextClient();
    const s = await setup({ instanceId: first.instanceId, host: new RecordingHost(first.instanceId, 'wa-test', 'CONNECTED', PHONE) });
    await s.session.connect();
    const connection = await loggingIn;
    await connection.waitForNode((node) => node.tag === 'iq' && node.attrs.xmlns === 'passive');
    await connection.rejectMessage('3EB0ABCDEF', `${PHONE.replace('99', '88')}@s.whatsapp.net`, '479');
    const failed = await s.host.next((e) => e.type === 'SEND_MESSAGE');
    expect(failed.data).toMatchObject({ key: { id: '3EB0ABCDEF', fromMe: true }, status: 'FAILED', error: { code: '479' } });
  });

  it('send refuses when the socket is not open', async () => {
    const s = await setup();
    await expect(s.session.send({ kind: 'text', to: PHONE, text: 'hi', linkPreview: false })).rejects.toMatchObject({
      code: 'instance_not_connected',
    });
  });

  it('connects through the instance proxy (HTTP CONNECT)', async () => {
    const tunnels: string[] = [];
    const proxy = http.createServer();
    proxy.on('connect', (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      tunnels.push(request.url ?? '');
      const [host, port] = (request.url ?? '').split(':');
      const upstream = net.connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = proxy.address() as AddressInfo;
      const s = await setup({ proxyUrl: `http://127.0.0.1:${port}` });
      const registering = server.nextClient();
      await s.session.connect();
      await registering;
      await s.host.next((e) => e.type === 'QRCODE');
      expect(tunnels).toEqual([new URL(url).host]);
    } finally {
      for (const driver of drivers.splice(0)) await driver.stop();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
