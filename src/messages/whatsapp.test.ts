/**
 * The /message routes on a WhatsApp instance: a whole gateway (SQLite) whose driver's real Baileys
 * socket is linked to the local WhatsApp stand-in. Sends resolve there (the stand-in knows no devices
 * of the recipient), so the road HTTP -> service -> WhatsApp message operations -> SEND_MESSAGE ->
 * message store is exercised, and typing and receipts are checked as the nodes WhatsApp receives.
 */
import { getBinaryNodeChild } from 'baileys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createInstance,
  recordEvents,
  startGateway,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { expectError, expectStatus, instanceCalls } from '../../test/support/social.js';
import { FakeWaServer, type FakeConnection } from '../network/whatsapp/fixtures/fake-wa-server.js';
import { MessageStore } from '../message-store/store.js';

const PHONE = '5511912340000';
const CONTACT = '5511988887777';
const CONTACT_JID = `${CONTACT}@s.whatsapp.net`;

describe('/message on a WhatsApp instance (local WhatsApp stand-in)', () => {
  let server: FakeWaServer;
  let gw: TestGateway;
  let events: RecordedEvents;
  let instance: TestInstance;
  let login: FakeConnection;
  const { get, post } = instanceCalls(() => gw);

  beforeAll(async () => {
    server = new FakeWaServer();
    const url = await server.start();
    gw = await startGateway({ env: { WHATSAPP_WS_URL: url, WHATSAPP_QR_TIMEOUT_MS: '5000' } });
    events = recordEvents(gw);
    instance = await createInstance(gw, { network: 'whatsapp' });
    const registering = server.nextClient();
    expectStatus(await post(instance, '/instance/connect'), 200);
    const connection = await registering;
    const qr = expectStatus(await get(instance, '/instance/qr'), 200);
    const loggingIn = server.nextClient();
    await connection.pairSuccess(qr.code, `${PHONE}:4@s.whatsapp.net`, '200000000000044:4@lid');
    await connection.waitForNode((node) => node.tag === 'iq' && Array.isArray(node.content) && node.content[0]?.tag === 'pair-device-sign');
    await connection.streamError('515');
    login = await loggingIn;
    await events.next(instance.id, 'CONNECTION', (e) => e.data.status === 'CONNECTED');
  });

  afterAll(async () => {
    await gw?.stop();
    await server?.stop();
  });

  it('reacts to, edits and deletes a sent text; the store follows the edit and the deletion', async () => {
    const sent = expectStatus(await post(instance, '/send/text', { number: CONTACT, text: 'helo there' }), 200);
    const id = sent.key.id as string;

    const reacted = expectStatus(await post(instance, '/message/react', { chatId: CONTACT, messageId: id, emoji: '❤️' }), 200);
    expect(reacted.message.reactionMessage).toMatchObject({ key: { remoteJid: CONTACT_JID, fromMe: true, id }, text: '❤️' });

    const edited = expectStatus(await post(instance, '/message/edit', { chatId: CONTACT, messageId: id, text: 'hello there' }), 200);
    expect(edited.message.protocolMessage).toMatchObject({ key: { id }, type: 'MESSAGE_EDIT' });
    await expect
      .poll(async () => {
        const found = expectStatus(await get(instance, `/message/find?messageId=${id}`), 200).items[0];
        return found?.message.extendedTextMessage?.text ?? found?.message.conversation;
      })
      .toBe('hello there');

    const revoked = expectStatus(await post(instance, '/message/delete', { chatId: CONTACT_JID, messageId: id }), 200);
    expect(revoked.message.protocolMessage).toMatchObject({ key: { id }, type: 'REVOKE' });
    await expect.poll(async () => expectStatus(await get(instance, `/message/find?messageId=${id}`), 200).items[0]?.deleted).toBe(true);
    for (const action of [reacted, edited, revoked]) await events.next(instance.id, 'SEND_MESSAGE', (e) => e.data.key.id === action.key.id);
    expectError(await post(instance, '/message/edit', { chatId: CONTACT, messageId: id, text: 'again' }), 409, /deleted for everyone/);
  });

  it('typing reaches WhatsApp as a <chatstate> node, paused follows after durationMs', async () => {
    expectStatus(await post(instance, '/message/presence', { chatId: CONTACT, presence: 'composing', durationMs: 100 }), 200);
    const composing = await login.waitForNode((n) => n.tag === 'chatstate' && getBinaryNodeChild(n, 'composing') !== undefined);
    expect(composing.attrs.to).toBe(CONTACT_JID);
    await login.waitForNode((n) => n.tag === 'chatstate' && getBinaryNodeChild(n, 'paused') !== undefined);
  });

  it('poll results of a sent poll start empty; unknown polls are 404', async () => {
    const poll = expectStatus(await post(instance, '/send/poll', { number: CONTACT, name: 'Tea?', options: ['yes', 'no'] }), 200);
    const results = expectStatus(await get(instance, `/message/poll-results?messageId=${poll.key.id}`), 200);
    expect(results).toMatchObject({
      pollMessageId: poll.key.id,
      chatId: CONTACT_JID,
      name: 'Tea?',
      options: [
        { name: 'yes', votes: 0, voters: [] },
        { name: 'no', votes: 0, voters: [] },
      ],
      voters: 0,
    });
    expectError(await get(instance, '/message/poll-results?messageId=3EB0NOSUCHPOLL'), 404, /poll .* not found/);
  });

  it("WhatsApp's refusals answer the same 4xx as on the group routes: 403 forbidden, 404 not found (not 502)", async () => {
    // Someone else's message in a group: deleting it for everyone first asks WhatsApp for the group's admins.
    const store = new MessageStore(gw.storage.db);
    const refusals = [
      { code: 403, text: 'forbidden', status: 403, errorCode: 'forbidden' },
      { code: 404, text: 'item-not-found', status: 404, errorCode: 'not_found' },
      { code: 401, text: 'not-authorized', status: 403, errorCode: 'forbidden' },
    ];
    for (const [i, refusal] of refusals.entries()) {
      const groupId = `12036300000009${i}@g.us`;
      const messageId = `3EB0THEIRS10${i}`;
      await store.save({
        instanceId: instance.id,
        key: { remoteJid: groupId, fromMe: false, id: messageId },
        participant: CONTACT_JID,
        messageType: 'conversation',
        message: { conversation: 'hi all' },
        messageTimestamp: Math.floor(Date.now() / 1000),
        createdAt: Date.now(),
      });
      const hook = server.onIq({ xmlns: 'w:g2', to: groupId }, { error: { code: refusal.code, text: refusal.text } });
      const res = await post(instance, '/message/delete', { chatId: groupId, messageId });
      expect(res.status).toBe(refusal.status);
      expect(res.body).toMatchObject({ code: refusal.errorCode, error: expect.stringContaining('WhatsApp') });
      expect(hook.calls).toHaveLength(1);
    }
  });
});
