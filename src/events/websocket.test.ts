import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ManualClock } from '../clock.js';
import {
  connectedInstance,
  createInstance,
  refusedUpgrade,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
} from '../../test/support/gateway.js';

interface Client {
  socket: WebSocket;
  messages: any[];
  closed: Promise<{ code: number; reason: string }>;
}

function open(gw: TestGateway, query: string, path = '/api/v1/ws'): Client {
  const socket = new WebSocket(`${gw.url.replace('http', 'ws')}${path}?${query}`);
  const messages: any[] = [];
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8'))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    socket.on('error', () => undefined);
  });
  return { socket, messages, closed };
}

async function subscribed(gw: TestGateway, client: Client, instanceId: string, count = 1) {
  await new Promise<void>((resolve, reject) => {
    if (client.socket.readyState === WebSocket.OPEN) return resolve();
    client.socket.once('open', () => resolve());
    client.socket.once('error', reject);
  });
  await waitFor(() => (gw.hub.count(instanceId) >= count ? true : undefined), 5000, 'subscription');
}

describe('WebSocket event stream', () => {
  let gw: TestGateway;
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    gw = await startGateway({ clock, env: { TOKEN_GRACE_SECONDS: '60', WS_MAX_BUFFERED_BYTES: '1024' } });
  });
  afterAll(async () => gw.stop());

  it('pushes the event envelopes of the token owner as JSON text frames', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const client = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, client, a.id);
    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'over ws' } });
    const event = await waitFor(() => client.messages.find((m) => m.event === 'SEND_MESSAGE'));
    expect(event).toMatchObject({ instanceId: a.id, instanceName: a.name, data: { key: sent.body.key } });
    expect(event.eventId).toBeTypeOf('string');
    client.socket.close();
  });

  it('also answers on the deprecated /ws path, with the deprecation headers on its upgrade', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const client = open(gw, `token=${a.token}&instanceId=${a.id}`, '/ws');
    const upgrade = new Promise<Record<string, unknown>>((resolve) => client.socket.once('upgrade', (res) => resolve(res.headers)));
    await subscribed(gw, client, a.id);
    expect(await upgrade).toMatchObject({
      deprecation: 'true',
      sunset: '2027-01-01',
      link: `</api/v1/ws?token=${a.token}&instanceId=${a.id}>; rel="successor-version"`,
    });
    client.socket.close();
    const current = open(gw, `token=${a.token}&instanceId=${a.id}`);
    const currentUpgrade = new Promise<Record<string, unknown>>((resolve) => current.socket.once('upgrade', (res) => resolve(res.headers)));
    await subscribed(gw, current, a.id);
    expect(await currentUpgrade).not.toHaveProperty('deprecation');
    current.socket.close();
  });

  it('refuses missing, invalid and foreign tokens before the upgrade, with an HTTP status and the error body', async () => {
    const a = await createInstance(gw);
    const b = await createInstance(gw);
    const url = (query: string) => `${gw.url.replace('http', 'ws')}/api/v1/ws?${query}`;
    expect(await refusedUpgrade(url(`instanceId=${a.id}`))).toMatchObject({
      status: 400,
      body: { code: 'validation_failed', error: 'token and instanceId query parameters are required' },
    });
    expect(await refusedUpgrade(url(`token=nope&instanceId=${a.id}`))).toMatchObject({ status: 401, body: { error: 'invalid api key' } });
    expect(await refusedUpgrade(url(`token=${gw.adminKey}&instanceId=${a.id}`))).toMatchObject({
      status: 401,
      body: { error: 'invalid api key' },
    });
    expect(await refusedUpgrade(url(`token=${b.token}&instanceId=${a.id}`))).toMatchObject({
      status: 403,
      body: { code: 'wrong_instance', error: 'token does not belong to this instanceId' },
    });
    // The deprecated path refuses the same way.
    expect((await refusedUpgrade(`${gw.url.replace('http', 'ws')}/ws?token=nope&instanceId=${a.id}`)).status).toBe(401);
  });

  it('accepts a rotated token during its grace period and refuses it after', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const rotated = await gw.api('POST', `/api/v1/instance/rotate-token/${a.id}`, { key: gw.adminKey });
    const old = open(gw, `token=${a.token}&instanceId=${a.id}`);
    const fresh = open(gw, `token=${rotated.body.newToken}&instanceId=${a.id}`);
    await subscribed(gw, old, a.id, 2);
    await subscribed(gw, fresh, a.id, 2);
    clock.advance(61_000);
    expect(await refusedUpgrade(`${gw.url.replace('http', 'ws')}/api/v1/ws?token=${a.token}&instanceId=${a.id}`)).toMatchObject({
      status: 401,
      body: { code: 'token_expired', error: 'token expired, please use the new token' },
    });
    old.socket.close();
    fresh.socket.close();
  });

  it('disconnects a client that does not read (1013 client too slow) instead of buffering without bound', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const client = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, client, a.id);
    // Stop reading: the server's unsent data grows past WS_MAX_BUFFERED_BYTES.
    (client.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const big = 'x'.repeat(60_000);
    for (let i = 0; i < 200 && gw.hub.count(a.id) > 0; i++) {
      await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from: uniqueNumber(), to: a.number, text: big } });
    }
    expect(gw.hub.count(a.id)).toBe(0);
    (client.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await client.closed;
    expect(closed.code).toBe(1013);
  });

  it('closes the streams of a deleted instance', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const client = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, client, a.id);
    await gw.api('DELETE', `/api/v1/instance/delete/${a.id}`, { key: gw.adminKey });
    expect((await client.closed).code).toBe(4404);
  });
});

describe('WebSocket streams and their tokens (real time)', () => {
  let gw: TestGateway;
  const logs = { level: 'debug' as const, lines: [] as string[] };

  beforeAll(async () => {
    gw = await startGateway({ env: { TOKEN_GRACE_SECONDS: '1', WS_MAX_CONNECTIONS_PER_INSTANCE: '3' }, logs });
  });
  afterAll(async () => gw.stop());

  it('closes a stream when the grace of its rotated token ends; the new token keeps streaming', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const old = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, old, a.id);
    const rotated = await gw.api('POST', `/api/v1/instance/rotate-token/${a.id}`, { key: gw.adminKey });
    const fresh = open(gw, `token=${rotated.body.newToken}&instanceId=${a.id}`);
    await subscribed(gw, fresh, a.id, 2);
    const started = Date.now();
    expect(await old.closed).toEqual({ code: 4401, reason: 'token expired, please use the new token' });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(gw.hub.count(a.id)).toBe(1);
    // Nothing reaches the old stream after its close; the new one still gets events.
    const seen = old.messages.length;
    const sent = await gw.api('POST', '/api/v1/send/text', {
      key: rotated.body.newToken,
      body: { number: uniqueNumber(), text: 'after grace' },
    });
    await waitFor(() => fresh.messages.find((m) => m.data?.key?.id === sent.body.key.id));
    expect(old.messages).toHaveLength(seen);
    fresh.socket.close();
  });

  it('closes a stream opened with a token already in its grace period when that grace ends', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    await gw.api('POST', `/api/v1/instance/rotate-token/${a.id}`, { key: gw.adminKey });
    const late = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, late, a.id);
    expect(await late.closed).toEqual({ code: 4401, reason: 'token expired, please use the new token' });
    expect(gw.hub.count(a.id)).toBe(0);
  });

  it('sees a rotation made elsewhere (another process) at the next check of its token', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const client = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, client, a.id);
    // Rotate in the database only, as another gateway process would; this process hears nothing.
    const graceUntil = Date.now() + 300;
    await gw.storage.db.updateTable('instance_tokens').set({ valid_until: graceUntil }).where('instance_id', '=', a.id).execute();
    // The token cache holds the old state for up to TOKEN_CACHE_SECONDS; the check after it sees the rotation.
    (gw.instances as unknown as { tokens: { evictInstance(id: string): void } }).tokens.evictInstance(a.id);
    await (gw.hub as unknown as { recheckTokens(): Promise<void> }).recheckTokens();
    expect(await client.closed).toEqual({ code: 4401, reason: 'token expired, please use the new token' });
  });

  it('refuses streams past WS_MAX_CONNECTIONS_PER_INSTANCE with 429 before the upgrade', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const clients = [0, 1, 2].map(() => open(gw, `token=${a.token}&instanceId=${a.id}`));
    for (const client of clients) await subscribed(gw, client, a.id, 1);
    await waitFor(() => (gw.hub.count(a.id) === 3 ? true : undefined));
    expect(await refusedUpgrade(`${gw.url.replace('http', 'ws')}/api/v1/ws?token=${a.token}&instanceId=${a.id}`)).toMatchObject({
      status: 429,
      body: { code: 'too_many_streams', error: 'too many WebSocket connections for this instance' },
    });
    // Another instance has its own allowance.
    const b = await connectedInstance(gw, uniqueNumber());
    const other = open(gw, `token=${b.token}&instanceId=${b.id}`);
    await subscribed(gw, other, b.id);
    for (const client of [...clients, other]) client.socket.close();
  });

  it('an oversize frame from a client closes its stream without an error-level log line', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const client = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, client, a.id);
    client.socket.send(Buffer.alloc(200_000, 1));
    expect((await client.closed).code).toBe(1009);
    await waitFor(() => (gw.hub.count(a.id) === 0 ? true : undefined));
    const levels = logs.lines.map((line) => JSON.parse(line) as { level: number; msg?: string; err?: { stack?: string } });
    expect(levels.filter((entry) => entry.level >= 50)).toEqual([]);
    expect(levels.some((entry) => entry.msg === 'websocket client error')).toBe(true);
    expect(logs.lines.join('')).not.toContain(a.token);
  });
});

describe('admin WebSocket (/admin/ws) under the stream rules', () => {
  let gw: TestGateway;
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    gw = await startGateway({ clock, env: { WS_MAX_CONNECTIONS_PER_INSTANCE: '2' } });
  });
  afterAll(async () => gw.stop());

  it('refuses admin sockets past WS_MAX_CONNECTIONS_PER_INSTANCE with 4429; instance streams keep their own allowance', async () => {
    const before = gw.hub.count();
    const first = open(gw, `token=${gw.adminKey}`, '/api/v1/admin/ws');
    const second = open(gw, `token=${gw.adminKey}`, '/api/v1/admin/ws');
    await waitFor(() => (gw.hub.count() === before + 2 ? true : undefined), 5000, 'admin watchers');
    expect(await open(gw, `token=${gw.adminKey}`, '/api/v1/admin/ws').closed).toEqual({
      code: 4429,
      reason: 'too many admin WebSocket connections',
    });
    const a = await createInstance(gw);
    const stream = open(gw, `token=${a.token}&instanceId=${a.id}`);
    await subscribed(gw, stream, a.id);
    // Closing one admin socket makes room for the next.
    first.socket.close();
    await waitFor(() => (gw.hub.count() === before + 2 ? true : undefined), 5000, 'one admin watcher gone');
    const again = open(gw, `token=${gw.adminKey}`, '/api/v1/admin/ws');
    await waitFor(() => (gw.hub.count() === before + 3 ? true : undefined), 5000, 'admin watcher again');
    for (const client of [second, again, stream]) client.socket.close();
  });

  it('sends nothing to an admin socket after its access token expired, and closes it with 4401', async () => {
    const registered = await gw.api('POST', '/api/v1/auth/register', {
      body: { email: 'ws-owner@example.com', password: 'correct horse battery' },
    });
    expect(registered.status).toBe(201);
    const before = gw.hub.count();
    const watcher = open(gw, `token=${registered.body.accessToken}`, '/api/v1/admin/ws');
    await waitFor(() => (gw.hub.count() === before + 1 ? true : undefined), 5000, 'admin watcher');
    const a = await createInstance(gw);
    expect((await gw.api('POST', '/api/v1/instance/connect', { key: a.token })).status).toBe(200);
    await waitFor(() => watcher.messages.find((m) => m.instanceId === a.id && m.event === 'QRCODE'));
    const seen = watcher.messages.length;
    // Past the token's expiry on the gateway's clock: the next event is not sent, the socket is cut.
    clock.advance(24 * 3_600_000);
    await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number: uniqueNumber() } });
    expect(await watcher.closed).toEqual({ code: 4401, reason: 'access token expired; reconnect with a fresh one' });
    expect(watcher.messages).toHaveLength(seen);
  });
});
