/**
 * The tests' fake WhatsApp server in a process of its own, for the session-cost bench: its side of
 * every connection (each node a client sent, the phones' Signal sessions and encryption) stays out
 * of the gateway's memory and CPU. Forked by bench/fake-wa-server-process.ts, which it talks to over
 * the IPC channel: it reports `ready` (its URL and its test root's public key, which the gateway's
 * process must trust), every `login`, and answers `scan` (the phone scans a QR: pair-success, the
 * 515 restart, then resolves once that phone's client logged in) and `memory` requests.
 *
 * Env: FAKE_WA_ACCOUNT (realistic | empty), FAKE_WA_BACKLOG (offline messages per resume of a
 * realistic account), FAKE_WA_PORT (0: any free port).
 */
// First, as in src/main.ts: without it every object shape this process meets after Baileys loads
// gets a map of its own, and the server, not the gateway, bounds the figures.
import '../src/network/whatsapp/oneof-getter.js';
import { shareAsyncLocalStorage } from '../src/network/whatsapp/async-context.js';
import { FakeWaServer, testRootPublicKey, type FakeConnection } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import { REALISTIC, RealisticAccount } from '../src/network/whatsapp/fixtures/realistic-account.js';

export type Request = { type: 'scan'; qr: string; phone: string } | { type: 'memory' };
export type ToChild = Request & { id: number };

export type FromChild =
  | { type: 'ready'; url: string; root: string }
  | { type: 'login'; username: string | undefined }
  | { type: 'done'; id: number; error?: string; memory?: { rss: number; heap: number } };

const send = (message: FromChild) => process.send?.(message);
const realistic = (process.env.FAKE_WA_ACCOUNT ?? 'realistic') === 'realistic';
const account = realistic
  ? new RealisticAccount({ ...REALISTIC, backlog: Number(process.env.FAKE_WA_BACKLOG ?? REALISTIC.backlog) })
  : undefined;
// The phones' Signal stores are Baileys' too, one AsyncLocalStorage each: as the gateway's driver
// does, share one, or every promise of this process walks a thousand of them.
shareAsyncLocalStorage();
const server = new FakeWaServer(account ? { account } : {});
const url = await server.start(Number(process.env.FAKE_WA_PORT ?? 0));
await account?.prepare();
server.on('client', (connection: FakeConnection) => {
  if (connection.kind === 'login') send({ type: 'login', username: connection.username });
});
server.on('protocol-error', (error: unknown) => console.error('fake WhatsApp server:', error));

/** The next client of `phone` that logs in. */
function loginOf(phone: string): Promise<FakeConnection> {
  return new Promise((resolve) => {
    const listener = (connection: FakeConnection) => {
      if (connection.kind !== 'login' || connection.username !== phone) return;
      server.off('client', listener);
      resolve(connection);
    };
    server.on('client', listener);
  });
}

/** As a phone scanning the QR: the registering client that was offered its ref gets pair-success, then the 515 restart. */
async function scan(qr: string, phone: string): Promise<void> {
  const ref = qr.slice(qr.indexOf('#') + 1).split(',')[0] ?? '';
  const connection = server.openConnections.find((c) => c.kind === 'registration' && c.qrRefs.includes(ref));
  if (!connection) throw new Error(`no registering client was offered ${ref}`);
  const loggingIn = loginOf(phone);
  await connection.pairSuccess(qr, `${phone}:4@s.whatsapp.net`, `2${phone.slice(1)}:4@lid`);
  await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
  await connection.streamError('515');
  await loggingIn;
}

const gc = (globalThis as { gc?: () => void }).gc;

process.on('message', (message: ToChild) => {
  if (message.type === 'memory') {
    gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    send({ type: 'done', id: message.id, memory: { rss, heap: heapUsed } });
    return;
  }
  scan(message.qr, message.phone).then(
    () => send({ type: 'done', id: message.id }),
    (error: unknown) => send({ type: 'done', id: message.id, error: String(error) }),
  );
});
// The parent went away (or stopped this process by closing the channel): so does the server.
process.on('disconnect', () => {
  void server.stop().finally(() => process.exit(0));
});
send({ type: 'ready', url, root: testRootPublicKey().toString('base64') });
