/** Links a WhatsApp instance of an in-process gateway to the tests' fake WhatsApp server, through the API. */
import { randomUUID } from 'node:crypto';
import type { FakeWaServer } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import type { TestGateway } from '../test/support/gateway.js';

/** Create, connect, QR, pair-success, 515 restart, login: as a phone scanning the QR. */
export async function pairedWhatsApp(gw: TestGateway, server: FakeWaServer, phone: string): Promise<{ id: string; token: string }> {
  const created = await gw.api('POST', '/api/v1/instance/create', {
    key: gw.adminKey,
    body: { instanceName: `wa-${randomUUID().slice(0, 8)}`, network: 'whatsapp' },
  });
  const registering = server.nextClient();
  await gw.api('POST', '/api/v1/instance/connect', { key: created.body.token });
  const connection = await registering;
  const qr = await gw.api<{ code: string }>('GET', '/api/v1/instance/qr', { key: created.body.token });
  const loggingIn = server.nextClient();
  await connection.pairSuccess(qr.body.code, `${phone}:4@s.whatsapp.net`, `2${phone.slice(1)}:4@lid`);
  await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
  await connection.streamError('515');
  await loggingIn;
  const deadline = Date.now() + 60_000;
  while ((await gw.api<{ status: string }>('GET', '/api/v1/instance/status', { key: created.body.token })).body.status !== 'CONNECTED') {
    if (Date.now() > deadline) throw new Error('the WhatsApp instance did not connect');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { id: created.body.instanceId, token: created.body.token };
}
