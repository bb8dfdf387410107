/**
 * The driver wired into a whole gateway (SQLite), pointed at the local WhatsApp stand-in through
 * WHATSAPP_WS_URL: the /instance routes reach Baileys, the stored status follows, the admin proxy
 * route works, and deleting the instance deletes its keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstance, startGateway, type TestGateway } from '../../../test/support/gateway.js';
import { FakeWaServer } from './fixtures/fake-wa-server.js';

let server: FakeWaServer;
let gw: TestGateway;

beforeAll(async () => {
  server = new FakeWaServer();
  const url = await server.start();
  gw = await startGateway({ env: { WHATSAPP_WS_URL: url, WHATSAPP_QR_TIMEOUT_MS: '5000' } });
});

afterAll(async () => {
  await gw.stop();
  await server.stop();
});

describe('whatsapp instances through the API', () => {
  it('connect shows a real QR (status QRCODE), /instance/qr serves it, pairing completes to CONNECTED', async () => {
    const instance = await createInstance(gw, { network: 'whatsapp' });
    const registering = server.nextClient();
    const connect = await gw.api('POST', '/api/v1/instance/connect', { key: instance.token });
    expect(connect.status).toBe(200);
    expect(connect.body.status).toBe('QRCODE');
    expect(connect.body.qrcode).toMatch(/^data:image\/png;base64,/);
    const connection = await registering;

    const qr = await gw.api('GET', '/api/v1/instance/qr', { key: instance.token });
    expect(qr.status).toBe(200);
    expect(qr.body.attempt).toBe(1);

    const loggingIn = server.nextClient();
    await connection.pairSuccess(qr.body.code, '5511912345678:4@s.whatsapp.net', '200000000000044:4@lid');
    await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
    await connection.streamError('515');
    await loggingIn;
    let status = await gw.api('GET', '/api/v1/instance/status', { key: instance.token });
    while (status.body.status !== 'CONNECTED') {
      await new Promise((resolve) => setTimeout(resolve, 10));
      status = await gw.api('GET', '/api/v1/instance/status', { key: instance.token });
    }
    expect(status.body).toMatchObject({ status: 'CONNECTED', number: '5511912345678' });

    // Interactive kinds are refused until the instance allows them; the driver reads the setting at send time.
    const button = { number: '5511987654321', text: 'Pick', buttons: [{ type: 'reply', id: 'yes', text: 'Yes' }] };
    const refused = await gw.api('POST', '/api/v1/send/button', { key: instance.token, body: button });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/interactive/);
    expect((await gw.api('GET', '/api/v1/instance/settings', { key: instance.token })).body).toEqual({ interactiveMessages: false });
    const enabled = await gw.api('POST', '/api/v1/instance/settings', { key: instance.token, body: { interactiveMessages: true } });
    expect(enabled.body).toEqual({ interactiveMessages: true });
    const allowed = await gw
      .api('POST', '/api/v1/send/button', { key: instance.token, body: button })
      .catch((error: unknown) => ({ status: 0, body: { error: String(error) } }));
    expect(allowed.body.error ?? '').not.toMatch(/interactive/);

    // Deleting the instance deletes its linked-device state.
    const before = await gw.storage.db
      .selectFrom('whatsapp_auth_creds')
      .select('instance_id')
      .where('instance_id', '=', instance.id)
      .execute();
    expect(before).toHaveLength(1);
    const deleted = await gw.api('DELETE', `/api/v1/instance/delete/${instance.id}`, { key: gw.adminKey });
    expect(deleted.status).toBe(200);
    const after = await gw.storage.db
      .selectFrom('whatsapp_auth_creds')
      .select('instance_id')
      .where('instance_id', '=', instance.id)
      .execute();
    expect(after).toEqual([]);
  });

  it('the admin sets and clears an instance proxy; bad URLs are refused', async () => {
    const instance = await createInstance(gw, { network: 'whatsapp' });
    const set = await gw.api('POST', `/api/v1/instance/proxy/${instance.id}`, {
      key: gw.adminKey,
      body: { proxyUrl: 'socks5://user:secret@127.0.0.1:1080' },
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ instanceId: instance.id, proxyUrl: 'socks5://user:***@127.0.0.1:1080', status: 'created' });
    const bad = await gw.api('POST', `/api/v1/instance/proxy/${instance.id}`, {
      key: gw.adminKey,
      body: { proxyUrl: 'ftp://127.0.0.1:21' },
    });
    expect(bad.status).toBe(400);
    const byInstance = await gw.api('POST', `/api/v1/instance/proxy/${instance.id}`, { key: instance.token, body: { proxyUrl: null } });
    expect(byInstance.status).toBe(403);
    const cleared = await gw.api('POST', `/api/v1/instance/proxy/${instance.id}`, { key: gw.adminKey, body: { proxyUrl: null } });
    expect(cleared.body.proxyUrl).toBeNull();
  });
});
