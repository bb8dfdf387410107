/**
 * Attack suite: what an outsider, or the holder of one instance's token, tries against a real
 * gateway. Wrong, short, malformed, expired, rotated and deleted keys on every route class;
 * instance keys on admin routes; one instance reaching for another's messages, media, chats, dead
 * letters, batches and WebSocket stream; SSRF forms for media and webhook URLs; oversize and deeply
 * nested bodies; line breaks in stored URLs; forged, tampered and misplaced web-user JWTs; and, at the end, a scan of every log line the gateway
 * wrote during the run for keys, tokens and secrets.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  connectedInstance,
  refusedUpgrade,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
  type TestInstance,
} from './support/gateway.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeSamples, type Samples } from './support/media.js';

const logs = { level: 'debug' as const, lines: [] as string[] };
/** Every secret handed out during the run: none may appear in a log line. */
const secrets = new Set<string>();

let gw: TestGateway;
let a: TestInstance;
let b: TestInstance;
let samples: Samples;
/** A loopback server standing in for an internal service; counts every request that reaches it. */
let internal: http.Server;
let internalHits = 0;

function remember(instance: TestInstance): TestInstance {
  secrets.add(instance.token);
  secrets.add(instance.webhookSecret);
  return instance;
}

/** One route of each class, called with `key`. */
const INSTANCE_ROUTES: [string, string, unknown?][] = [
  ['GET', '/api/v1/instance/status'],
  ['POST', '/api/v1/send/text', { number: '5511999990000', text: 'x' }],
  ['GET', '/api/v1/chat/list'],
  ['GET', '/api/v1/message/find'],
  ['GET', '/api/v1/message/download/ABC'],
  ['GET', '/api/v1/send/batch/00000000-0000-0000-0000-000000000000'],
  ['POST', '/api/v1/instance/webhook', { webhookEvents: 'ALL' }],
  ['GET', '/instance/status'],
];
const ADMIN_ROUTES: [string, string, unknown?][] = [
  ['GET', '/api/v1/instance/all'],
  ['POST', '/api/v1/instance/create', { instanceName: 'never-created', network: 'sandbox' }],
  ['GET', '/api/v1/instance/webhook-dead-letters/some-id'],
  ['POST', '/api/v1/instance/rotate-token/some-id'],
  ['POST', '/api/v1/sandbox/scan', { instanceId: 'x', number: '5511999990000' }],
];

/** A /ws upgrade the gateway must refuse: its HTTP status and error body. */
function ws(query: string): Promise<{ status: number; body: any }> {
  return refusedUpgrade(`${gw.url.replace('http', 'ws')}/api/v1/ws?${query}`);
}

beforeAll(async () => {
  gw = await startGateway({ env: { TOKEN_GRACE_SECONDS: '0', MEDIA_ALLOW_HTTP_URLS: 'true', BODY_LIMIT_BYTES: '65536' }, logs });
  secrets.add(gw.adminKey);
  samples = await makeSamples();
  internal = http.createServer((_req, res) => {
    internalHits += 1;
    res.writeHead(200, { 'content-type': 'image/png' }).end(samples.png);
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  a = remember(await connectedInstance(gw, uniqueNumber()));
  b = remember(await connectedInstance(gw, uniqueNumber()));
});

afterAll(async () => {
  await gw?.stop();
  internal?.close();
});

describe('keys', () => {
  it('refuses missing, empty, short, malformed and unknown keys on every route class with 401', async () => {
    const wrong = [
      undefined,
      '',
      'short',
      'wgt_',
      `wgt_${'!'.repeat(43)}`,
      `wgt_${'a'.repeat(42)}`,
      `wgt_${'a'.repeat(44)}`,
      `wgt_${randomBytes(32).toString('base64url')}`,
      gw.adminKey.slice(0, -1),
      `${a.token}x`,
      a.token.toUpperCase(),
      "' OR 1=1 --",
      '../../etc/passwd',
    ];
    for (const [method, route, body] of [...INSTANCE_ROUTES, ...ADMIN_ROUTES]) {
      for (const key of wrong) {
        const res = await gw.api(method, route, { ...(key !== undefined ? { key } : {}), ...(body ? { body } : {}) });
        expect(res.status, `${method} ${route} with ${JSON.stringify(key)}`).toBe(401);
        expect(res.body).toMatchObject({ error: 'invalid api key' });
      }
    }
  });

  it('an instance token on admin routes gets 403, the admin key on instance routes gets 403', async () => {
    for (const [method, route, body] of ADMIN_ROUTES) {
      const res = await gw.api(method, route, { key: a.token, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(403);
    }
    for (const [method, route, body] of INSTANCE_ROUTES) {
      const res = await gw.api(method, route, { key: gw.adminKey, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(403);
    }
  });

  it('a rotated token past its grace gets "token expired"; a deleted instance token gets 401 everywhere', async () => {
    const victim = remember(await connectedInstance(gw, uniqueNumber()));
    const rotated = await gw.api('POST', `/api/v1/instance/rotate-token/${victim.id}`, { key: gw.adminKey });
    secrets.add(rotated.body.newToken);
    for (const [method, route, body] of INSTANCE_ROUTES) {
      const res = await gw.api(method, route, { key: victim.token, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(401);
      expect(res.body).toMatchObject({ error: 'token expired, please use the new token' });
    }
    expect(await ws(`token=${victim.token}&instanceId=${victim.id}`)).toMatchObject({
      status: 401,
      body: { error: 'token expired, please use the new token' },
    });
    await gw.api('DELETE', `/api/v1/instance/delete/${victim.id}`, { key: gw.adminKey });
    for (const [method, route, body] of INSTANCE_ROUTES) {
      const res = await gw.api(method, route, { key: rotated.body.newToken, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(401);
    }
    expect((await ws(`token=${rotated.body.newToken}&instanceId=${victim.id}`)).status).toBe(401);
  });
});

describe('one instance reaching for another', () => {
  it("cannot read another instance's messages, media, chats, batches, dead letters or stream", async () => {
    // To a contact outside the gateway (B would legitimately hold a message sent to B itself).
    const other = uniqueNumber();
    const sent = await gw.api('POST', '/api/v1/send/media', {
      key: a.token,
      body: { number: other, media: { base64: samples.png.toString('base64') } },
    });
    expect(sent.status).toBe(200);
    const id = sent.body.key.id as string;
    // A can read its own message and media ...
    await waitFor(async () =>
      (await gw.api('GET', `/api/v1/message/download/${id}`, { key: a.token })).status === 200 ? true : undefined,
    );
    // ... B cannot, whatever way it asks.
    expect((await gw.api('GET', `/api/v1/message/download/${id}`, { key: b.token })).status).toBe(404);
    expect((await gw.api('GET', `/api/v1/message/download/${id}/base64`, { key: b.token })).status).toBe(404);
    const found = await gw.api('GET', `/api/v1/message/find?messageId=${encodeURIComponent(id)}`, { key: b.token });
    expect(found.status).toBe(200);
    expect(found.body.items).toEqual([]);
    const forward = await gw.api('POST', '/api/v1/send/forward', { key: b.token, body: { number: uniqueNumber(), messageId: id } });
    expect(forward.status).toBe(404);
    // Chats: B's list shows only B's own chats (A's chat with B's number appears as B's chat with A, never A's other chats).
    await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: other, text: 'private to A' } });
    const chats = await gw.api('GET', '/api/v1/chat/list?limit=500', { key: b.token });
    expect(JSON.stringify(chats.body)).not.toContain(other);
    expect(
      JSON.stringify((await gw.api('GET', `/api/v1/message/find?text=${encodeURIComponent('private to A')}`, { key: b.token })).body.items),
    ).toBe('[]');
    // Batches.
    const batch = await gw.api('POST', '/api/v1/send/batch/text', {
      key: a.token,
      body: { messages: [{ number: other, text: 'batched' }] },
    });
    expect(batch.status).toBe(202);
    const batchId = batch.body.batchId ?? batch.body.id;
    expect((await gw.api('GET', `/api/v1/send/batch/${batchId}`, { key: a.token })).status).toBe(200);
    expect((await gw.api('GET', `/api/v1/send/batch/${batchId}`, { key: b.token })).status).toBe(404);
    expect((await gw.api('POST', `/api/v1/send/batch/${batchId}/cancel`, { key: b.token })).status).toBe(404);
    // Dead letters are admin-only, whoever owns them.
    expect((await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: b.token })).status).toBe(403);
    expect((await gw.api('GET', `/api/v1/instance/webhook-dead-letters/${a.id}`, { key: a.token })).status).toBe(403);
    // The stream of another instance.
    expect(await ws(`token=${b.token}&instanceId=${a.id}`)).toMatchObject({
      status: 403,
      body: { error: 'token does not belong to this instanceId' },
    });
  });
});

describe('server-side request forgery', () => {
  const loopbackForms = (port: string) => [
    `http://127.0.0.1:${port}/x.png`,
    `http://2130706433:${port}/x.png`,
    `http://0x7f000001:${port}/x.png`,
    `http://0x7f.0.0.1:${port}/x.png`,
    `http://017700000001:${port}/x.png`,
    `http://0177.0.0.1:${port}/x.png`,
    `http://127.1:${port}/x.png`,
    `http://127.0.1:${port}/x.png`,
    `http://[::1]:${port}/x.png`,
    `http://[::ffff:127.0.0.1]:${port}/x.png`,
    `http://[::ffff:7f00:1]:${port}/x.png`,
    `http://[::127.0.0.1]:${port}/x.png`,
    `http://[0:0:0:0:0:0:0:1]:${port}/x.png`,
    `http://localhost:${port}/x.png`,
    'http://169.254.169.254/latest/meta-data/',
    'http://[::169.254.169.254]/latest/meta-data/',
    'http://[::ffff:a9fe:a9fe]/latest/meta-data/',
    'http://10.0.0.1/x.png',
    'http://[::10.0.0.1]/x.png',
    'http://172.16.0.1/x.png',
    'http://192.168.0.1/x.png',
    'http://100.64.0.1/x.png',
    'http://0.0.0.0/x.png',
    'http://[fe80::1]/x.png',
    'http://[fd00::1]/x.png',
    'http://[2002:7f00:1::1]/x.png',
    'http://[64:ff9b::7f00:1]/x.png',
  ];

  it('refuses every spelling of a private media URL, and a redirect into one', async () => {
    const port = String((internal.address() as AddressInfo).port);
    for (const target of loopbackForms(port)) {
      const res = await gw.api('POST', '/api/v1/send/media', { key: a.token, body: { number: b.number, media: { url: target } } });
      expect(res.status, target).toBe(422);
      expect(res.body.error, target).toMatch(/non-public address|MEDIA_ALLOW_PRIVATE_URLS/);
    }
    for (const scheme of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://127.0.0.1:6379/_INFO', 'data:image/png;base64,AAAA']) {
      const res = await gw.api('POST', '/api/v1/send/media', { key: a.token, body: { number: b.number, media: { url: scheme } } });
      expect(res.status, scheme).toBe(400);
    }
    expect(internalHits).toBe(0);
  });

  it('refuses every spelling of a private webhook URL set with an instance token', async () => {
    for (const target of loopbackForms('8080')) {
      const res = await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: target } });
      expect(res.status, target).toBe(422);
    }
  });

  it('refuses a private Chatwoot base URL set with an instance token, before calling it', async () => {
    const port = String((internal.address() as AddressInfo).port);
    for (const target of loopbackForms(port).slice(0, 12)) {
      const res = await gw.api('POST', '/api/v1/chatwoot', {
        key: a.token,
        body: { baseUrl: target.replace(/\/x\.png$/, ''), accountId: 1, apiAccessToken: 'token-123456', inboxName: 'WhatsApp' },
      });
      expect(res.status, target).toBe(422);
      expect(res.body.error, target).toMatch(/non-public address/);
    }
    expect(internalHits).toBe(0);
  });

  it('refuses line breaks and spaces in stored URLs (no header injection)', async () => {
    for (const bad of [
      'https://hooks.example.com/a\r\nX-Injected: 1',
      'https://hooks.example.com/a\nb',
      'https://hooks.example.com/a b',
      'https://hooks.example.com/\u0000',
    ]) {
      const res = await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: bad } });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      const proxy = await gw.api('POST', `/api/v1/instance/proxy/${a.id}`, {
        key: gw.adminKey,
        body: { proxyUrl: bad.replace('https', 'http') },
      });
      expect(proxy.status, JSON.stringify(bad)).toBe(400);
      const created = await gw.api('POST', '/api/v1/instance/create', {
        key: gw.adminKey,
        body: { instanceName: `inj-${randomBytes(3).toString('hex')}`, webhookUrl: bad },
      });
      expect(created.status, JSON.stringify(bad)).toBe(400);
    }
  });
});

describe('bodies', () => {
  it('answers oversize bodies with 413 and deeply nested or broken JSON with 400, never 5xx', async () => {
    const big = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: 'x'.repeat(200_000) } });
    expect(big.status).toBe(413);
    for (const depth of [1_000, 100_000]) {
      const nested = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      const res = await gw.api('POST', '/api/v1/send/text', {
        key: a.token,
        body: nested.length > 65_536 ? nested.slice(0, 60_000) : nested,
      });
      expect(res.status, `depth ${depth}`).toBe(400);
      const arrays = `${'['.repeat(depth)}${']'.repeat(depth)}`;
      const res2 = await gw.api('POST', '/api/v1/send/text', {
        key: a.token,
        body: arrays.length > 65_536 ? arrays.slice(0, 60_000) : arrays,
      });
      expect(res2.status, `array depth ${depth}`).toBe(400);
    }
    for (const broken of [
      '{',
      '{"number":',
      'null',
      '[]',
      '"x"',
      '{"__proto__":{"admin":true},"number":"1","text":"x"}',
      '{"constructor":{"prototype":{"x":1}}}',
    ]) {
      const res = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: broken });
      expect(res.status, broken).toBeGreaterThanOrEqual(400);
      expect(res.status, broken).toBeLessThan(500);
    }
    // Still serving.
    expect((await gw.api('GET', '/api/v1/server/ok')).status).toBe(200);
  });
});

describe('web-user tokens (JWT) misused', () => {
  const PASSWORD = 'attack suite password';
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  let owner: { accessToken: string; refreshToken: string; user: { id: string } };
  let viewer: { accessToken: string; refreshToken: string; user: { id: string } };

  async function invited(role: string, email: string) {
    const invitation = await gw.api('POST', '/api/v1/auth/invitations', { headers: bearer(owner.accessToken), body: { role } });
    expect(invitation.status).toBe(201);
    const registered = await gw.api('POST', '/api/v1/auth/register', {
      body: { email, password: PASSWORD, invitation: invitation.body.code },
    });
    expect(registered.status).toBe(201);
    secrets.add(registered.body.accessToken);
    secrets.add(registered.body.refreshToken);
    return registered.body;
  }

  function closeOf(route: string, query: string): Promise<number> {
    return new Promise((resolve) => {
      const socket = new WebSocket(`${gw.url.replace('http', 'ws')}${route}?${query}`);
      socket.on('close', (code) => resolve(code));
      socket.on('error', () => undefined);
    });
  }

  beforeAll(async () => {
    const first = await gw.api('POST', '/api/v1/auth/register', { body: { email: 'owner@attack.example', password: PASSWORD } });
    expect(first.status).toBe(201);
    owner = first.body;
    secrets.add(owner.accessToken);
    secrets.add(owner.refreshToken);
    viewer = await invited('viewer', 'viewer@attack.example');
  });

  it('forged, unsigned, re-signed and role-tampered tokens answer 401 on admin routes', async () => {
    const [header, payload, signature] = viewer.accessToken.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = [
      // alg none, no signature
      `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, role: 'owner' })}.`,
      // the viewer's own signature over a payload that says owner
      `${header}.${b64({ ...claims, role: 'owner' })}.${signature}`,
      // another user's id under the viewer's signature
      `${header}.${b64({ ...claims, sub: owner.user.id })}.${signature}`,
      // a key the gateway never had
      `${header}.${payload}.${randomBytes(32).toString('base64url')}`,
      // HS512 header on an HS256 signature (algorithm confusion)
      `${b64({ alg: 'HS512', typ: 'JWT' })}.${payload}.${signature}`,
      // expired a minute ago, same signature (the payload no longer matches it)
      `${header}.${b64({ ...claims, exp: Math.floor(Date.now() / 1000) - 60 })}.${signature}`,
      `${header}.${payload}`,
      `${header}..${signature}`,
    ];
    for (const token of forged) {
      for (const [method, route, body] of ADMIN_ROUTES) {
        const res = await gw.api(method, route, { headers: bearer(token), ...(body ? { body } : {}) });
        expect(res.status, `${method} ${route} with ${token.slice(0, 40)}…`).toBe(401);
      }
      expect((await gw.api('GET', '/api/v1/auth/me', { headers: bearer(token) })).status).toBe(401);
    }
  });

  it('a refresh token is not an access token, and an access token does not refresh', async () => {
    for (const [method, route, body] of ADMIN_ROUTES) {
      const res = await gw.api(method, route, { headers: bearer(owner.refreshToken), ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(401);
    }
    expect((await gw.api('GET', '/api/v1/auth/me', { headers: bearer(owner.refreshToken) })).status).toBe(401);
    const refreshed = await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: owner.accessToken } });
    // Refresh tokens have their own shape (wgr_…): a JWT is refused by the schema before any lookup.
    expect(refreshed.status).toBe(400);
    // Neither works as an api key.
    expect((await gw.api('GET', '/api/v1/instance/all', { key: owner.accessToken })).status).toBe(401);
    expect((await gw.api('GET', '/api/v1/instance/all', { key: owner.refreshToken })).status).toBe(401);
  });

  it('a JWT is never an instance token, on REST or on the instance WebSocket', async () => {
    for (const [method, route, body] of INSTANCE_ROUTES) {
      const res = await gw.api(method, route, { headers: bearer(owner.accessToken), ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(401);
    }
    expect((await ws(`token=${owner.accessToken}&instanceId=${a.id}`)).status).toBe(401);
  });

  it('a viewer may read but every write route class answers 403, and the admin stream refuses it', async () => {
    expect((await gw.api('GET', '/api/v1/instance/all', { headers: bearer(viewer.accessToken) })).status).toBe(200);
    for (const [method, route, body] of ADMIN_ROUTES.filter(([method]) => method !== 'GET')) {
      const res = await gw.api(method, route, { headers: bearer(viewer.accessToken), ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(403);
    }
    for (const [method, route, body] of [
      ['DELETE', `/api/v1/instance/delete/${a.id}`],
      ['POST', '/api/v1/auth/invitations', { role: 'owner' }],
      ['PATCH', `/api/v1/auth/users/${viewer.user.id}`, { role: 'owner' }],
    ] as [string, string, unknown?][]) {
      const res = await gw.api(method, route, { headers: bearer(viewer.accessToken), ...(body ? { body } : {}) });
      expect(res.status, `${method} ${route}`).toBe(403);
    }
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).status).toBe(200);
    expect(await closeOf('/api/v1/admin/ws', `token=${viewer.accessToken}`)).toBe(4403);
  });

  it("a deleted user's tokens stop working at once, on REST and on the admin stream", async () => {
    const operator = await invited('operator', 'operator@attack.example');
    expect((await gw.api('GET', '/api/v1/instance/all', { headers: bearer(operator.accessToken) })).status).toBe(200);
    expect((await gw.api('DELETE', `/api/v1/auth/users/${operator.user.id}`, { headers: bearer(owner.accessToken) })).status).toBe(200);
    expect((await gw.api('GET', '/api/v1/instance/all', { headers: bearer(operator.accessToken) })).status).toBe(401);
    expect((await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: operator.refreshToken } })).status).toBe(401);
    expect(await closeOf('/api/v1/admin/ws', `token=${operator.accessToken}`)).toBe(4401);
  });
});

describe('logs', () => {
  it('never contain a key, token or secret handed out during the run', async () => {
    // Make sure the run produced log lines at all (the scan must look at something).
    await gw.api('GET', '/api/v1/instance/status', { key: a.token });
    await gw.api('GET', `/ws?token=${a.token}&instanceId=${a.id}`);
    expect(logs.lines.length).toBeGreaterThan(50);
    const all = logs.lines.join('');
    for (const secret of secrets) {
      expect(all.includes(secret), `a secret of ${secret.length} characters appears in the logs`).toBe(false);
    }
    expect(all).not.toMatch(/wgt_[A-Za-z0-9_-]{43}/);
  });
});
