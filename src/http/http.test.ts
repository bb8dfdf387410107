import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { createInstance, startGateway, type TestGateway } from '../../test/support/gateway.js';

describe('cross-cutting HTTP behaviour', () => {
  let gw: TestGateway;
  const clock = new ManualClock(Date.parse('2026-06-01T00:00:00Z'));

  beforeAll(async () => {
    gw = await startGateway({ clock, env: { CORS_ORIGIN: '*' } });
  });
  afterAll(async () => gw.stop());

  it('answers /server/ok without a key, with status and version', async () => {
    const res = await gw.api('GET', '/api/v1/server/ok');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it('refuses a missing, wrong or malformed key with 401 "invalid api key"', async () => {
    for (const key of [undefined, 'nope', 'x'.repeat(500), 'wgt_' + 'A'.repeat(43), 'wgt_short', gw.adminKey + 'x']) {
      const res = await gw.api('GET', '/api/v1/instance/status', key === undefined ? {} : { key });
      expect(res.status, String(key)).toBe(401);
      expect(res.body).toEqual({ error: 'invalid api key', code: 'invalid_api_key' });
    }
    const admin = await gw.api('GET', '/api/v1/instance/all', { key: 'wrong-admin-key-000000' });
    expect(admin.status).toBe(401);
    expect(admin.body).toEqual({ error: 'invalid api key', code: 'invalid_api_key' });
  });

  it('keeps instance tokens off admin routes and the admin key off instance routes (403)', async () => {
    const a = await createInstance(gw);
    const onAdmin = await gw.api('GET', '/api/v1/instance/all', { key: a.token });
    expect(onAdmin.status).toBe(403);
    expect(onAdmin.body.error).toMatch(/admin key/);
    const onInstance = await gw.api('GET', '/api/v1/instance/status', { key: gw.adminKey });
    expect(onInstance.status).toBe(403);
    expect(onInstance.body.error).toMatch(/instance token/);
  });

  it('serves every route under /api/v1 and, deprecated, without the prefix', async () => {
    const v1 = await gw.api('GET', '/api/v1/server/ok');
    expect(v1.headers.get('deprecation')).toBeNull();
    expect(v1.headers.get('sunset')).toBeNull();
    const old = await gw.api('GET', '/server/ok');
    expect(old.status).toBe(200);
    expect(old.headers.get('deprecation')).toBe('true');
    expect(old.headers.get('sunset')).toBe('2027-01-01');
    const a = await createInstance(gw);
    const oldStatus = await gw.api('GET', '/instance/status', { key: a.token });
    expect(oldStatus.status).toBe(200);
    expect(oldStatus.headers.get('deprecation')).toBe('true');
    const oldCreate = await gw.api('POST', '/instance/create', { key: gw.adminKey, body: { instanceName: `old-${a.name}` } });
    expect(oldCreate.status).toBe(201);
  });

  it('answers 410 on unprefixed routes from the sunset date', async () => {
    const saved = clock.now();
    clock.set(Date.parse('2027-01-01T00:00:00Z'));
    try {
      const old = await gw.api('GET', '/server/ok');
      expect(old.status).toBe(410);
      expect(old.body.error).toContain('/api/v1');
      expect((await gw.api('GET', '/api/v1/server/ok')).status).toBe(200);
    } finally {
      clock.set(saved);
    }
  });

  it('gives every response an X-Request-ID, keeping a valid incoming one', async () => {
    const res = await gw.api('GET', '/api/v1/server/ok');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const mine = '0b6c3a52-7c5f-4a56-9a55-1b1f0a0e2d11';
    const kept = await gw.api('GET', '/api/v1/server/ok', { headers: { 'x-request-id': mine } });
    expect(kept.headers.get('x-request-id')).toBe(mine);
    const replaced = await gw.api('GET', '/api/v1/server/ok', { headers: { 'x-request-id': 'not-a-uuid' } });
    expect(replaced.headers.get('x-request-id')).not.toBe('not-a-uuid');
    const notFound = await gw.api('GET', '/api/v1/nope');
    expect(notFound.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers CORS with CORS_ORIGIN (default *)', async () => {
    const res = await fetch(`${gw.url}/api/v1/server/ok`, { headers: { origin: 'https://app.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const preflight = await fetch(`${gw.url}/api/v1/send/text`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBeLessThan(300);
    // Every method the API uses, and the headers a browser client needs to read.
    for (const [method, route] of [
      ['DELETE', '/api/v1/instance/delete/some-id'],
      ['PATCH', '/api/v1/auth/me'],
      ['PUT', '/api/v1/send/text'],
    ]) {
      const res = await fetch(`${gw.url}${route}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': method!,
          'access-control-request-headers': 'apikey,content-type',
        },
      });
      expect(res.status, method).toBeLessThan(300);
      expect(res.headers.get('access-control-allow-methods')?.split(/,\s*/), method).toContain(method);
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('apikey');
    }
    const exposed = (await fetch(`${gw.url}/api/v1/server/ok`, { headers: { origin: 'https://app.example' } })).headers;
    expect(exposed.get('access-control-expose-headers')?.toLowerCase()).toContain('x-request-id');
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await gw.api('GET', '/api/v1/does/not/exist');
    expect(res.status).toBe(404);
    expect(res.body.error).toContain('not found');
  });

  it('names the problem for malformed JSON, wrong content type, oversize and wrong types', async () => {
    const a = await createInstance(gw);
    const bad = await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: '{"webhookUrl":' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/JSON/);
    const type = await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: 'x=1', headers: { 'content-type': 'text/plain' } });
    expect(type.status).toBe(415);
    expect(typeof type.body.error).toBe('string');
    const big = await gw.api('POST', '/api/v1/instance/webhook', {
      key: a.token,
      body: { webhookUrl: `https://x/${'a'.repeat(2_000_000)}` },
    });
    expect(big.status).toBe(413);
    const wrong = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: 5511999999999, text: 'x' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('body.number must be string');
    const missing = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: '5511999999999' } });
    expect(missing.body.error).toBe('body.text is required');
    const extra = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: '5511999999999', text: 'x', foo: 1 } });
    expect(extra.body.error).toBe('body.foo is not an allowed field');
    const letters = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: '+55 11 9999', text: 'x' } });
    expect(letters.status).toBe(400);
    expect(letters.body.error).toMatch(/body\.number/);
  });

  it('publishes an OpenAPI 3.1 document and a docs page', async () => {
    const doc = await gw.api('GET', '/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toContain('/api/v1/instance/create');
    expect(Object.keys(doc.body.paths).every((p: string) => p.startsWith('/api/v1/'))).toBe(true);
    const docs = await fetch(`${gw.url}/docs/`, { redirect: 'follow' });
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('<html');
  });
});
