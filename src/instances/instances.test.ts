import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { DIALECTS, createInstance, startGateway, uniqueName, type TestGateway } from '../../test/support/gateway.js';

describe.each(DIALECTS)('instances on %s', (dialect) => {
  let gw: TestGateway;
  const clock = new ManualClock(Date.parse('2026-06-01T00:00:00Z'));

  beforeAll(async () => {
    gw = await startGateway({ dialect, clock, env: { TOKEN_GRACE_SECONDS: '3600' } });
  });
  afterAll(async () => gw.stop());

  it('creates an instance and returns token, secret and status created', async () => {
    const name = uniqueName('create');
    const res = await gw.api('POST', '/api/v1/instance/create', {
      key: gw.adminKey,
      body: { instanceName: name, webhookUrl: 'https://example.com/hook' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ instanceName: name, webhookUrl: 'https://example.com/hook', status: 'created', network: 'whatsapp' });
    expect(res.body.token).toMatch(/^wgt_[A-Za-z0-9_-]{43}$/);
    expect(res.body.webhookSecret.length).toBeGreaterThanOrEqual(16);
    expect(res.body.instanceId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('stores only the SHA-256 of the token', async () => {
    const instance = await createInstance(gw);
    const rows = await gw.storage.db.selectFrom('instance_tokens').selectAll().where('instance_id', '=', instance.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    const all = JSON.stringify(await gw.storage.db.selectFrom('instances').selectAll().execute());
    expect(all).not.toContain(instance.token);
  });

  it('refuses a duplicate name with 409 and bad names with 400', async () => {
    const instance = await createInstance(gw);
    const dup = await gw.api('POST', '/api/v1/instance/create', { key: gw.adminKey, body: { instanceName: instance.name } });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toContain('already exists');
    for (const instanceName of ['', 'a b', 'x'.repeat(65), 'ü', 12]) {
      const bad = await gw.api('POST', '/api/v1/instance/create', { key: gw.adminKey, body: { instanceName } });
      expect(bad.status, JSON.stringify(instanceName)).toBe(400);
      expect(bad.body.error).toMatch(/instanceName/);
    }
    const badUrl = await gw.api('POST', '/api/v1/instance/create', {
      key: gw.adminKey,
      body: { instanceName: uniqueName(), webhookUrl: 'ftp://x' },
    });
    expect(badUrl.status).toBe(400);
    const badNet = await gw.api('POST', '/api/v1/instance/create', {
      key: gw.adminKey,
      body: { instanceName: uniqueName(), network: 'telegram' },
    });
    expect(badNet.status).toBe(400);
  });

  it('lists instances without tokens, paged', async () => {
    const a = await createInstance(gw);
    const res = await gw.api('GET', '/api/v1/instance/all?offset=0&limit=500', { key: gw.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.total).toBeGreaterThanOrEqual(1);
    const found = res.body.items.find((i: any) => i.instanceId === a.id);
    expect(found).toMatchObject({ instanceName: a.name, network: 'sandbox', status: 'created' });
    expect(JSON.stringify(res.body)).not.toContain(a.token);
    expect(JSON.stringify(res.body)).not.toContain(a.webhookSecret);
    const page = await gw.api('GET', '/api/v1/instance/all?offset=0&limit=1', { key: gw.adminKey });
    expect(page.body.items).toHaveLength(1);
    expect(page.body.limit).toBe(1);
    expect((await gw.api('GET', '/api/v1/instance/all?limit=0', { key: gw.adminKey })).status).toBe(400);
  });

  it('shows the status of the calling instance', async () => {
    const a = await createInstance(gw);
    const res = await gw.api('GET', '/api/v1/instance/status', { key: a.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      instanceId: a.id,
      instanceName: a.name,
      status: 'created',
      health: { score: 0, reasons: ['never connected (-100)'] },
    });
  });

  it('deletes an instance with its tokens; 404 for unknown ids', async () => {
    const a = await createInstance(gw);
    const res = await gw.api('DELETE', `/api/v1/instance/delete/${a.id}`, { key: gw.adminKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true, instanceId: a.id });
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).status).toBe(401);
    const tokens = await gw.storage.db.selectFrom('instance_tokens').selectAll().where('instance_id', '=', a.id).execute();
    expect(tokens).toHaveLength(0);
    expect((await gw.api('DELETE', `/api/v1/instance/delete/${a.id}`, { key: gw.adminKey })).status).toBe(404);
  });

  it('rotates a token: both work during grace, then the old one gets "token expired"', async () => {
    const a = await createInstance(gw);
    const res = await gw.api('POST', `/api/v1/instance/rotate-token/${a.id}`, { key: gw.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.newToken).toMatch(/^wgt_/);
    expect(res.body.oldTokenValidUntil).toBe(new Date(clock.now() + 3600_000).toISOString());
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).status).toBe(200);
    expect((await gw.api('GET', '/api/v1/instance/status', { key: res.body.newToken })).status).toBe(200);

    clock.advance(3599_000);
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).status).toBe(200);
    clock.advance(1_000);
    const expired = await gw.api('GET', '/api/v1/instance/status', { key: a.token });
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ error: 'token expired, please use the new token', code: 'token_expired' });
    expect((await gw.api('GET', '/api/v1/instance/status', { key: res.body.newToken })).status).toBe(200);
    expect((await gw.api('POST', '/api/v1/instance/rotate-token/nope', { key: gw.adminKey })).status).toBe(404);
  });

  it('changes webhook settings; the secret is write-only', async () => {
    const a = await createInstance(gw);
    const res = await gw.api('POST', '/api/v1/instance/webhook', {
      key: a.token,
      body: { webhookUrl: 'https://hooks.example.com:9/x', webhookEvents: ['MESSAGE', 'CONNECTION'], webhookSecret: 's'.repeat(32) },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      webhookUrl: 'https://hooks.example.com:9/x',
      webhookEvents: ['MESSAGE', 'CONNECTION'],
      webhookBatch: null,
      secretSet: true,
    });
    const get = await gw.api('GET', '/api/v1/instance/webhook', { key: a.token });
    expect(get.body).toEqual(res.body);
    expect(JSON.stringify(get.body)).not.toContain('s'.repeat(32));
    expect((await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookEvents: ['NOPE'] } })).status).toBe(400);
    expect((await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: {} })).status).toBe(400);
    expect((await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookSecret: 'short' } })).status).toBe(400);
    const cleared = await gw.api('POST', '/api/v1/instance/webhook', { key: a.token, body: { webhookUrl: null, webhookEvents: 'ALL' } });
    expect(cleared.body).toEqual({ webhookUrl: null, webhookEvents: 'ALL', webhookBatch: null, secretSet: true });
  });
});
