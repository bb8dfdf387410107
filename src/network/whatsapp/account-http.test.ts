/**
 * Chats, users, labels and calls of a WhatsApp instance through the gateway: the HTTP routes reach
 * the driver (no longer 501), WhatsApp's refusals come out as the sandbox's 4xx, the per-instance
 * auto-reject of src/calls works on WhatsApp calls, and the port answers have the sandbox's fields.
 * The local WhatsApp stand-in answers the queries; the instance is paired by QR through the API.
 */
import { getBinaryNodeChild, type BinaryNode, type WASocket } from 'baileys';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';
import { contactSays, expectError, expectStatus, instanceCalls } from '../../../test/support/social.js';
import { CONTACT_LID, CONTACT_PN } from './fixtures/baileys-payloads.js';
import { FakeWaServer, iqChild, type FakeConnection } from './fixtures/fake-wa-server.js';
import { pairedThroughApi } from './fixtures/linked-session.js';

let server: FakeWaServer;
let gw: TestGateway;
let instance: TestInstance;
let connection: FakeConnection;
const { get, post } = instanceCalls(() => gw);

beforeAll(async () => {
  server = new FakeWaServer();
  const url = await server.start();
  gw = await startGateway({ env: { WHATSAPP_WS_URL: url, WHATSAPP_QR_TIMEOUT_MS: '5000' } });
  ({ instance, connection } = await pairedThroughApi(gw, server, '5511912340000'));
});

afterEach(() => server.clearIqHooks());

afterAll(async () => {
  await gw.stop();
  await server.stop();
});

const PRIVACY = {
  last: 'contacts',
  online: 'all',
  profile: 'all',
  status: 'contacts',
  groupadd: 'contacts',
  readreceipts: 'all',
  calladd: 'all',
};

function privacyReply() {
  return {
    content: [
      { tag: 'privacy', attrs: {}, content: Object.entries(PRIVACY).map(([name, value]) => ({ tag: 'category', attrs: { name, value } })) },
    ],
  };
}

function isContactQuery(iq: BinaryNode): boolean {
  return iq.attrs.xmlns === 'usync' && getBinaryNodeChild(getBinaryNodeChild(iqChild(iq), 'query'), 'contact') !== undefined;
}

/** WhatsApp offering a call to the instance. */
async function offer(callId: string): Promise<void> {
  await connection.send({
    tag: 'call',
    attrs: { from: CONTACT_LID, id: `srv-${callId}`, t: String(Math.floor(Date.now() / 1000)) },
    content: [
      {
        tag: 'offer',
        attrs: { 'call-id': callId, 'call-creator': CONTACT_LID, caller_pn: CONTACT_PN },
        content: [{ tag: 'audio', attrs: { enc: 'opus' } }],
      },
    ],
  });
}

/** Answers the instance's reject stanza for `callId` as WhatsApp does (an ack). */
async function ackReject(callId: string): Promise<BinaryNode> {
  const stanza = await connection.waitForNode((n) => n.tag === 'call' && getBinaryNodeChild(n, 'reject')?.attrs['call-id'] === callId);
  await connection.send({ tag: 'ack', attrs: { id: stanza.attrs.id ?? '', class: 'call', from: CONTACT_LID } });
  return stanza;
}

/** Fields only one answer has, or whose JSON types differ (null matches any type). */
function shapeDifferences(expected: unknown, actual: unknown): string[] {
  const a = expected as Record<string, unknown>;
  const b = actual as Record<string, unknown>;
  const kind = (v: unknown) => (Array.isArray(v) ? 'array' : typeof v);
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].flatMap((key) => {
    if (!(key in a) || !(key in b)) return [`${key}: only on ${key in a ? 'the sandbox' : 'whatsapp'}`];
    if (a[key] === null || b[key] === null || kind(a[key]) === kind(b[key])) return [];
    return [`${key}: ${kind(a[key])} and ${kind(b[key])}`];
  });
}

describe('whatsapp chats, users, labels and calls through the API', () => {
  it('answer instead of 501: privacy, number check; the personal account gets 403 for labels as on the sandbox', async () => {
    server.onIq({ xmlns: 'privacy', type: 'get' }, privacyReply());
    const privacy = expectStatus(await get(instance, '/user/privacy'), 200);
    expect(privacy).toEqual({
      lastSeen: 'contacts',
      online: 'all',
      profilePicture: 'all',
      about: 'contacts',
      groupAdd: 'contacts',
      readReceipts: 'all',
      calls: 'all',
    });

    server.onIq(isContactQuery, {
      content: [
        {
          tag: 'usync',
          attrs: {},
          content: [
            {
              tag: 'list',
              attrs: {},
              content: [{ tag: 'user', attrs: { jid: CONTACT_PN }, content: [{ tag: 'contact', attrs: { type: 'in' } }] }],
            },
          ],
        },
      ],
    });
    const check = expectStatus(await get(instance, '/chat/check?numbers=5511988887777&numbers=5511900000001'), 200);
    expect(check.items).toEqual([
      { number: '5511988887777', jid: CONTACT_PN, exists: true },
      { number: '5511900000001', jid: '5511900000001@s.whatsapp.net', exists: false },
    ]);

    expectError(await get(instance, '/label/list'), 403, /only available to WhatsApp Business accounts/);
    const sandbox = await connectedInstance(gw, uniqueNumber());
    expectError(await get(sandbox, '/label/list'), 403, /only available to WhatsApp Business accounts/);

    expectError(await post(instance, '/user/block', { number: '5511912340000' }), 400, /cannot block itself/);
    expectError(await get(instance, '/chat/info?chatId=5511900000002'), 404, /not found/);
    expectError(await post(instance, '/call/reject', { callId: 'NO-SUCH-CALL' }), 404, /not found/);
  });

  it("the instance's auto-reject setting rejects WhatsApp calls through the driver; the history says by whom", async () => {
    expectStatus(await post(instance, '/call/settings', { autoReject: true }), 200);
    await offer('HTTPCALL1');
    const stanza = await ackReject('HTTPCALL1');
    expect(stanza.attrs.to).toBe(CONTACT_LID);
    const history = await waitFor(async () => {
      const page = expectStatus(await get(instance, '/call/history'), 200);
      return page.items[0]?.status === 'rejected' ? page : undefined;
    });
    expect(history.items[0]).toMatchObject({
      callId: 'HTTPCALL1',
      from: CONTACT_PN,
      status: 'rejected',
      rejectedBy: 'auto',
      direction: 'incoming',
    });
    expectStatus(await post(instance, '/call/settings', { autoReject: false }), 200);

    await offer('HTTPCALL2');
    await waitFor(async () => (expectStatus(await get(instance, '/call/history'), 200).total === 2 ? true : undefined));
    const rejecting = post(instance, '/call/reject', { callId: 'HTTPCALL2' });
    await ackReject('HTTPCALL2');
    expect(expectStatus(await rejecting, 200)).toMatchObject({ callId: 'HTTPCALL2', status: 'rejected', rejectedBy: 'user' });
    expectError(await post(instance, '/call/reject', { callId: 'HTTPCALL2' }), 409, /not ringing/);
  });

  it("the port contract: chat, privacy, number check and call answers have the sandbox's fields", async () => {
    const sandbox = await connectedInstance(gw, uniqueNumber());
    const carla = uniqueNumber();
    await contactSays(gw, carla, sandbox.number!, 'oi');
    const sandboxChat = expectStatus(await get(sandbox, `/chat/info?chatId=${carla}`), 200);

    // A chat reaches the WhatsApp instance as Baileys reports it; the first sync holds events
    // back (up to 20 s after a QR pairing), so the test lets them through at once.
    const session = await gw.sessions.connected(await gw.instances.get(instance.id));
    const socket = (session as unknown as { socket: WASocket }).socket;
    socket.ev.emit('chats.upsert', [{ id: CONTACT_PN, unreadCount: 1, conversationTimestamp: Math.floor(Date.now() / 1000) }]);
    socket.ev.flush();
    const whatsappChat = await waitFor(async () => {
      const response = await get(instance, `/chat/info?chatId=5511988887777`);
      return response.status === 200 ? response.body : undefined;
    });
    const { lastMessage: _a, ...sandboxRest } = sandboxChat as Record<string, unknown>;
    const { lastMessage: _b, ...whatsappRest } = whatsappChat as Record<string, unknown>;
    expect(shapeDifferences(sandboxRest, whatsappRest)).toEqual([]);

    server.onIq({ xmlns: 'privacy', type: 'get' }, privacyReply());
    expect(
      shapeDifferences(expectStatus(await get(sandbox, '/user/privacy'), 200), expectStatus(await get(instance, '/user/privacy'), 200)),
    ).toEqual([]);
    const calls = expectStatus(await get(instance, '/call/history'), 200);
    expect(Object.keys(calls.items[0] as object).sort()).toEqual([
      'callId',
      'direction',
      'endedAt',
      'from',
      'isGroup',
      'isVideo',
      'offeredAt',
      'rejectedBy',
      'status',
    ]);
  });
});
