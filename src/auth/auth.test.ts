import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ManualClock } from '../clock.js';
import { createInstance, DIALECTS, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';

const PASSWORD = 'correct horse battery';

function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}

function refreshCookieOf(headers: Headers): string | undefined {
  const cookie = headers.getSetCookie().find((c) => c.startsWith('waygate_refresh='));
  return cookie?.split(';')[0];
}

async function register(gw: TestGateway, email: string, extra: Record<string, unknown> = {}) {
  return gw.api('POST', '/api/v1/auth/register', { body: { email, password: PASSWORD, ...extra } });
}

async function login(gw: TestGateway, email: string, password = PASSWORD) {
  return gw.api('POST', '/api/v1/auth/login', { body: { email, password } });
}

/** Registers a user through an owner's invitation and answers its session. */
async function invited(gw: TestGateway, ownerToken: string, email: string, role: string) {
  const invitation = await gw.api('POST', '/api/v1/auth/invitations', { headers: bearer(ownerToken), body: { role } });
  expect(invitation.status).toBe(201);
  const registered = await register(gw, email, { invitation: invitation.body.code });
  expect(registered.status).toBe(201);
  return registered.body;
}

describe.each(DIALECTS)('auth on %s', (dialect) => {
  let gw: TestGateway;
  const clock = new ManualClock(Date.now());
  let owner: any;

  beforeAll(async () => {
    gw = await startGateway({
      dialect,
      clock,
      env: { AUTH_LOGIN_MAX_FAILURES: '3', AUTH_LOGIN_MAX_FAILURES_PER_IP: '8', AUTH_LOGIN_LOCK_SECONDS: '600' },
    });
  });
  afterAll(async () => gw.stop());

  it('the first registration creates the owner and signs in; then registration closes', async () => {
    expect((await gw.api('GET', '/api/v1/auth/registration')).body).toEqual({ firstUser: true, open: true });
    const first = await register(gw, 'Owner@Example.com', { name: 'Olivia' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      tokenType: 'Bearer',
      expiresIn: 900,
      user: { email: 'owner@example.com', name: 'Olivia', role: 'owner' },
    });
    expect(first.body.accessToken.split('.')).toHaveLength(3);
    const cookie = first.headers.getSetCookie().find((c) => c.startsWith('waygate_refresh='))!;
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/api/v1/auth');
    expect(cookie).toContain(encodeURIComponent(first.body.refreshToken));
    owner = first.body;

    expect((await gw.api('GET', '/api/v1/auth/registration')).body).toEqual({ firstUser: false, open: false });
    const second = await register(gw, 'someone@example.com');
    expect(second.status).toBe(403);
    expect(second.body).toMatchObject({ error: 'registration is closed: ask an owner for an invitation code' });
  });

  it('login answers a JWT session; wrong passwords and unknown emails answer the same 401', async () => {
    const ok = await login(gw, 'OWNER@example.com');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ tokenType: 'Bearer', user: { role: 'owner' } });
    expect(refreshCookieOf(ok.headers)).toBeDefined();
    const wrong = await login(gw, 'owner@example.com', 'not the password');
    const unknown = await login(gw, 'nobody@example.com', 'not the password');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: 'wrong email or password' });
    expect(unknown.body).toEqual(wrong.body);
    const short = await gw.api('POST', '/api/v1/auth/register', { body: { email: 'x@example.com', password: 'short' } });
    expect(short.status).toBe(400);
  });

  it('GET/PATCH /auth/me need a user access token; keys and instance tokens are not users', async () => {
    const me = await gw.api('GET', '/api/v1/auth/me', { headers: bearer(owner.accessToken) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'owner@example.com', role: 'owner' });
    const instance = await createInstance(gw);
    for (const key of [instance.token, gw.adminKey]) {
      const refused = await gw.api('GET', '/api/v1/auth/me', { key });
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ error: expect.stringContaining('signed-in user') });
    }
    const renamed = await gw.api('PATCH', '/api/v1/auth/me', { headers: bearer(owner.accessToken), body: { name: 'Olivia O.' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Olivia O.');
    expect((await gw.api('PATCH', '/api/v1/auth/me', { headers: bearer(owner.accessToken), body: {} })).status).toBe(400);
  });

  it('tampered, foreign-key, unsigned and expired JWTs answer 401', async () => {
    const [header, payload, signature] = owner.accessToken.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, role: 'owner', sub: 'someone-else' })).toString('base64url');
    const otherKey = createHmac('sha256', 'x'.repeat(40)).update(`${header}.${payload}`).digest('base64url');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of [
      `${header}.${forged}.${signature}`,
      `${header}.${payload}.${otherKey}`,
      none,
      `${header}.${payload}.${flipped}`,
      'not-a-jwt',
    ]) {
      for (const route of ['/api/v1/auth/me', '/api/v1/instance/all']) {
        const res = await gw.api('GET', route, { headers: bearer(bad) });
        expect(res.status, `${route} with ${bad.slice(-12)}`).toBe(401);
        expect(res.body).toMatchObject({ error: 'invalid or expired access token; refresh it or sign in again' });
      }
    }
    const fresh = (await login(gw, 'owner@example.com')).body;
    clock.advance(901_000);
    const expired = await gw.api('GET', '/api/v1/auth/me', { headers: bearer(fresh.accessToken) });
    expect(expired.status).toBe(401);
    expect(expired.body).toMatchObject({ error: 'invalid or expired access token; refresh it or sign in again' });
    // The refresh token outlives the access token.
    const renewed = await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: fresh.refreshToken } });
    expect(renewed.status).toBe(200);
    owner = renewed.body;
  });

  it('refresh rotates the token (cookie or body); reusing a spent one ends the whole sign-in', async () => {
    const signedIn = await login(gw, 'owner@example.com');
    const cookie = refreshCookieOf(signedIn.headers)!;
    const first = await gw.api('POST', '/api/v1/auth/refresh', { headers: { cookie } });
    expect(first.status).toBe(200);
    expect(first.body.refreshToken).not.toBe(signedIn.body.refreshToken);
    expect(refreshCookieOf(first.headers)).toBe(`waygate_refresh=${encodeURIComponent(first.body.refreshToken)}`);
    const second = await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: first.body.refreshToken } });
    expect(second.status).toBe(200);

    const reused = await gw.api('POST', '/api/v1/auth/refresh', { headers: { cookie } });
    expect(reused.status).toBe(401);
    expect(reused.body).toMatchObject({ error: expect.stringContaining('already used') });
    // The newest token of that family was revoked with it.
    const after = await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: second.body.refreshToken } });
    expect(after.status).toBe(401);
    // Another sign-in is untouched.
    expect((await gw.api('GET', '/api/v1/auth/me', { headers: bearer(owner.accessToken) })).status).toBe(200);
    expect((await gw.api('POST', '/api/v1/auth/refresh', {})).status).toBe(401);
    expect((await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: 'wgr_unknown' } })).status).toBe(401);
  });

  it('logout ends the sign-in of its refresh token and clears the cookie', async () => {
    const signedIn = (await login(gw, 'owner@example.com')).body;
    const out = await gw.api('POST', '/api/v1/auth/logout', { body: { refreshToken: signedIn.refreshToken } });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()[0]).toContain('Max-Age=0');
    expect((await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: signedIn.refreshToken } })).status).toBe(401);
    expect((await gw.api('POST', '/api/v1/auth/logout', {})).status).toBe(401);
  });

  it('a JWT of an owner or operator works on admin routes; a viewer may only read', async () => {
    const list = await gw.api('GET', '/api/v1/instance/all', { headers: bearer(owner.accessToken) });
    expect(list.status).toBe(200);
    const created = await gw.api('POST', '/api/v1/instance/create', {
      headers: bearer(owner.accessToken),
      body: { instanceName: `jwt-${dialect}`, network: 'sandbox' },
    });
    expect(created.status).toBe(201);

    const operator = await invited(gw, owner.accessToken, `operator-${dialect}@example.com`, 'operator');
    expect(operator.user.role).toBe('operator');
    expect(
      (await gw.api('POST', `/api/v1/instance/rotate-token/${created.body.instanceId}`, { headers: bearer(operator.accessToken) })).status,
    ).toBe(200);
    const notOwner = await gw.api('GET', '/api/v1/auth/users', { headers: bearer(operator.accessToken) });
    expect(notOwner.status).toBe(403);
    expect(notOwner.body).toMatchObject({ error: 'only an owner may do this' });

    const viewer = await invited(gw, owner.accessToken, `viewer-${dialect}@example.com`, 'viewer');
    expect((await gw.api('GET', '/api/v1/instance/all', { headers: bearer(viewer.accessToken) })).status).toBe(200);
    const write = await gw.api('DELETE', `/api/v1/instance/delete/${created.body.instanceId}`, { headers: bearer(viewer.accessToken) });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ error: 'this account may only read; ask an owner or operator' });
    expect(
      (await gw.api('GET', `/api/v1/instance/all`, { key: gw.adminKey })).body.items.some(
        (i: any) => i.instanceId === created.body.instanceId,
      ),
    ).toBe(true);
    // A JWT is not an instance token.
    expect((await gw.api('GET', '/api/v1/instance/status', { headers: bearer(owner.accessToken) })).status).toBe(401);
  });

  it('invitations are single-use and expire; owners manage roles but never leave no owner', async () => {
    const invitation = await gw.api('POST', '/api/v1/auth/invitations', {
      headers: bearer(owner.accessToken),
      body: { role: 'viewer', expiresInHours: 1 },
    });
    expect(invitation.body.registerPath).toBe(`/register?invitation=${encodeURIComponent(invitation.body.code)}`);
    expect((await register(gw, `once-${dialect}@example.com`, { invitation: invitation.body.code })).status).toBe(201);
    const again = await register(gw, `twice-${dialect}@example.com`, { invitation: invitation.body.code });
    expect(again.status).toBe(403);
    expect(again.body).toMatchObject({ error: 'invitation code is unknown, used or expired' });
    const late = await gw.api('POST', '/api/v1/auth/invitations', {
      headers: bearer(owner.accessToken),
      body: { role: 'viewer', expiresInHours: 1 },
    });
    clock.advance(3_600_001);
    owner = (await login(gw, 'owner@example.com')).body;
    expect((await register(gw, `late-${dialect}@example.com`, { invitation: late.body.code })).status).toBe(403);
    const listed = await gw.api('GET', '/api/v1/auth/invitations', { headers: bearer(owner.accessToken) });
    expect(listed.body.items.find((i: any) => i.id === invitation.body.id)).toMatchObject({ role: 'viewer', usedBy: expect.any(String) });
    expect(JSON.stringify(listed.body)).not.toContain(invitation.body.code);
    expect((await gw.api('DELETE', `/api/v1/auth/invitations/${late.body.id}`, { headers: bearer(owner.accessToken) })).status).toBe(200);

    const users = (await gw.api('GET', '/api/v1/auth/users', { headers: bearer(owner.accessToken) })).body.items;
    const viewer = users.find((u: any) => u.email === `once-${dialect}@example.com`);
    const promoted = await gw.api('PATCH', `/api/v1/auth/users/${viewer.id}`, {
      headers: bearer(owner.accessToken),
      body: { role: 'operator' },
    });
    expect(promoted.body.role).toBe('operator');
    const lastOwner = await gw.api('PATCH', `/api/v1/auth/users/${owner.user.id}`, {
      headers: bearer(owner.accessToken),
      body: { role: 'viewer' },
    });
    expect(lastOwner.status).toBe(409);
    expect((await gw.api('DELETE', `/api/v1/auth/users/${viewer.id}`, { headers: bearer(owner.accessToken) })).status).toBe(200);
  });

  it('changing the password ends every sign-in, including earlier access tokens', async () => {
    const other = (await login(gw, 'owner@example.com')).body;
    const wrong = await gw.api('POST', '/api/v1/auth/me/password', {
      headers: bearer(owner.accessToken),
      body: { currentPassword: 'nope nope', newPassword: 'a brand new secret' },
    });
    expect(wrong.status).toBe(401);
    const changed = await gw.api('POST', '/api/v1/auth/me/password', {
      headers: bearer(owner.accessToken),
      body: { currentPassword: PASSWORD, newPassword: 'a brand new secret' },
    });
    expect(changed.status).toBe(200);
    expect((await gw.api('POST', '/api/v1/auth/refresh', { body: { refreshToken: other.refreshToken } })).status).toBe(401);
    expect((await gw.api('GET', '/api/v1/auth/me', { headers: bearer(other.accessToken) })).status).toBe(401);
    expect((await gw.api('GET', '/api/v1/auth/me', { headers: bearer(changed.body.accessToken) })).status).toBe(200);
    expect((await login(gw, 'owner@example.com')).status).toBe(401);
    const back = await login(gw, 'owner@example.com', 'a brand new secret');
    expect(back.status).toBe(200);
    owner = back.body;
  });

  it('locks an account after repeated failures (even for the right password) and an IP after more', async () => {
    clock.advance(700_000);
    for (let i = 0; i < 3; i += 1) expect((await login(gw, 'owner@example.com', `bad ${i}`)).status).toBe(401);
    const locked = await login(gw, 'owner@example.com', 'a brand new secret');
    expect(locked.status).toBe(429);
    expect(locked.body).toMatchObject({ error: 'too many failed sign-ins; wait before trying again', retryAfter: 600 });
    expect(locked.headers.get('retry-after')).toBe('600');
    clock.advance(601_000);
    expect((await login(gw, 'owner@example.com', 'a brand new secret')).status).toBe(200);

    // Per IP: failures spread over many accounts.
    for (let i = 0; i < 8; i += 1) expect((await login(gw, `spray${i}@example.com`, 'guess guess')).status).toBe(401);
    const ipLocked = await login(gw, 'owner@example.com', 'a brand new secret');
    expect(ipLocked.status).toBe(429);
    expect(ipLocked.body.retryAfter).toBeGreaterThan(0);
    clock.advance(601_000);
    owner = (await login(gw, 'owner@example.com', 'a brand new secret')).body;
    expect(owner.user.role).toBe('owner');
  });

  it("the admin WebSocket streams every instance's events to owners, operators and the admin key", async () => {
    const before = gw.hub.count();
    const url = gw.url.replace('http', 'ws');
    const messages: any[] = [];
    const socket = new WebSocket(`${url}/api/v1/admin/ws?token=${owner.accessToken}&events=CONNECTION,QRCODE`);
    socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString())));
    await waitFor(() => (gw.hub.count() > before ? true : undefined), 5000, 'admin watcher');
    const a = await createInstance(gw);
    const b = await createInstance(gw);
    for (const instance of [a, b]) expect((await gw.api('POST', '/api/v1/instance/connect', { key: instance.token })).status).toBe(200);
    await waitFor(() =>
      messages.some((m) => m.instanceId === a.id && m.event === 'QRCODE') &&
      messages.some((m) => m.instanceId === b.id && m.event === 'QRCODE')
        ? true
        : undefined,
    );
    expect(messages.every((m) => m.event === 'CONNECTION' || m.event === 'QRCODE')).toBe(true);
    socket.close();

    const closeOf = (query: string) =>
      new Promise<number>((resolve) => {
        const s = new WebSocket(`${url}/api/v1/admin/ws?${query}`);
        s.on('close', (code) => resolve(code));
        s.on('error', () => undefined);
      });
    expect(await closeOf('token=not-a-token')).toBe(4401);
    expect(await closeOf('')).toBe(4401);
    const viewer = await invited(gw, owner.accessToken, `ws-viewer-${dialect}@example.com`, 'viewer');
    expect(await closeOf(`token=${viewer.accessToken}`)).toBe(4403);

    const adminMessages: any[] = [];
    const admin = new WebSocket(`${url}/api/v1/admin/ws?token=${gw.adminKey}&instanceId=${a.id}`);
    admin.on('message', (data: Buffer) => adminMessages.push(JSON.parse(data.toString())));
    const count = gw.hub.count();
    await new Promise((resolve) => admin.once('open', resolve));
    await waitFor(() => (gw.hub.count() >= count ? true : undefined));
    const scan = await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: a.id, number: uniqueNumber() } });
    expect(scan.status).toBe(200);
    await waitFor(() => adminMessages.find((m) => m.event === 'CONNECTION' && m.data.status === 'CONNECTED'));
    expect(adminMessages.every((m) => m.instanceId === a.id)).toBe(true);
    admin.close();
  });
});

describe('sign-in behind a reverse proxy (TRUST_PROXY)', () => {
  let gw: TestGateway;
  const viaProxy = (client: string, proto = 'http') => ({ 'x-forwarded-for': client, 'x-forwarded-proto': proto });
  const loginFrom = (client: string, email: string, password: string, proto?: string) =>
    gw.api('POST', '/api/v1/auth/login', { headers: viaProxy(client, proto), body: { email, password } });

  beforeAll(async () => {
    gw = await startGateway({ env: { TRUST_PROXY: 'loopback', AUTH_LOGIN_MAX_FAILURES: '3', AUTH_LOGIN_MAX_FAILURES_PER_IP: '4' } });
    expect((await register(gw, 'owner@example.com')).status).toBe(201);
  });
  afterAll(async () => gw.stop());

  it("one client's password spraying locks that client's address, not every client behind the proxy", async () => {
    for (let i = 0; i < 4; i += 1) expect((await loginFrom('203.0.113.9', `spray${i}@example.com`, 'guess guess')).status).toBe(401);
    expect((await loginFrom('203.0.113.9', 'owner@example.com', PASSWORD)).status).toBe(429);
    expect((await loginFrom('203.0.113.10', 'owner@example.com', PASSWORD)).status).toBe(200);
  });

  it('the refresh cookie is Secure when the proxy says the client used https', async () => {
    const https = await loginFrom('203.0.113.11', 'owner@example.com', PASSWORD, 'https');
    const http = await loginFrom('203.0.113.11', 'owner@example.com', PASSWORD, 'http');
    const cookie = (headers: Headers) => headers.getSetCookie().find((c) => c.startsWith('waygate_refresh='))!;
    expect(cookie(https.headers)).toContain('; Secure');
    expect(cookie(http.headers)).not.toContain('Secure');
  });
});
