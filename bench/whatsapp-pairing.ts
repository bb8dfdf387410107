/** Links a WhatsApp instance of a gateway to the tests' fake WhatsApp server, through the API. */
import { randomUUID } from 'node:crypto';
import { FakeWaServer } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import type { TestGateway } from '../test/support/gateway.js';
import type { FakeWaServerProcess } from './fake-wa-server-process.js';

/**
 * Create, connect, QR, pair-success, 515 restart, login: as a phone scanning the QR. The server runs
 * in this process or in a child process (bench/fake-wa-server-process.ts).
 */
export async function pairedWhatsApp(
  gw: Pick<TestGateway, 'api' | 'adminKey'>,
  server: FakeWaServer | FakeWaServerProcess,
  phone: string,
): Promise<{ id: string; token: string }> {
  const created = await gw.api('POST', '/api/v1/instance/create', {
    key: gw.adminKey,
    body: { instanceName: `wa-${randomUUID().slice(0, 8)}`, network: 'whatsapp' },
  });
  const deadline = Date.now() + 60_000;
  const waitUntil = async (done: () => Promise<boolean>, what: string) => {
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(what);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  if (server instanceof FakeWaServer) {
    const registering = server.nextClient();
    await gw.api('POST', '/api/v1/instance/connect', { key: created.body.token });
    const connection = await registering;
    const qr = await gw.api<{ code: string }>('GET', '/api/v1/instance/qr', { key: created.body.token });
    const loggingIn = server.nextClient();
    await connection.pairSuccess(qr.body.code, `${phone}:4@s.whatsapp.net`, `2${phone.slice(1)}:4@lid`);
    await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
    await connection.streamError('515');
    await loggingIn;
  } else {
    await gw.api('POST', '/api/v1/instance/connect', { key: created.body.token });
    let code: string | undefined;
    await waitUntil(async () => {
      const qr = await gw.api<{ code: string }>('GET', '/api/v1/instance/qr', { key: created.body.token });
      code = qr.status === 200 ? qr.body.code : undefined;
      return code !== undefined;
    }, 'the WhatsApp instance offered no QR');
    await server.scan(code!, phone);
  }
  await waitUntil(
    async () =>
      (await gw.api<{ status: string }>('GET', '/api/v1/instance/status', { key: created.body.token })).body.status === 'CONNECTED',
    'the WhatsApp instance did not connect',
  );
  return { id: created.body.instanceId, token: created.body.token };
}
