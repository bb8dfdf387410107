/**
 * /message react, presence, read, delete, edit, find and poll-results end to end: two connected
 * sandbox instances talk through the real gateway over HTTP, on SQLite and on PostgreSQL (the find
 * filters and the stored edits, deletions and votes are SQL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  createInstance,
  DIALECTS,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { expectError, expectStatus, instanceCalls, PNG_BASE64 } from '../../test/support/social.js';

const jid = (number: string | undefined) => `${number}@s.whatsapp.net`;

describe.each(DIALECTS)('/message on the sandbox network (%s)', (dialect) => {
  let gw: TestGateway;
  let events: RecordedEvents;
  /** Moves the gateway's clock (and the sandbox network's) forward, for the edit window. */
  let offsetMs = 0;
  const { get, post } = instanceCalls(() => gw);

  beforeAll(async () => {
    gw = await startGateway({ dialect, clock: { now: () => Date.now() + offsetMs } });
    events = recordEvents(gw);
  });
  afterAll(async () => gw?.stop());

  /** a -> b text; returns its id once b received it. */
  async function say(from: TestInstance, to: TestInstance, text: string): Promise<string> {
    const sent = expectStatus(await post(from, '/send/text', { number: to.number, text }), 200);
    await events.next(to.id, 'MESSAGE', (e) => e.data.key.id === sent.key.id);
    return sent.key.id as string;
  }

  async function pair(): Promise<[TestInstance, TestInstance]> {
    return [await connectedInstance(gw, uniqueNumber()), await connectedInstance(gw, uniqueNumber())];
  }

  it('reacts to a received message, replaces and removes the reaction; the author sees each one', async () => {
    const [a, b] = await pair();
    const id = await say(a, b, 'react to me');

    const reacted = expectStatus(await post(b, '/message/react', { chatId: a.number, messageId: id, emoji: '👍🏽' }), 200);
    expect(reacted).toMatchObject({
      key: { remoteJid: jid(a.number), fromMe: true },
      status: 'SENT',
      message: { reactionMessage: { key: { remoteJid: jid(a.number), fromMe: false, id }, text: '👍🏽' } },
    });
    const seen = await events.next(a.id, 'MESSAGE', (e) => e.data.message.reactionMessage?.text === '👍🏽');
    expect(seen.data).toMatchObject({
      key: { remoteJid: jid(b.number), fromMe: false, id: reacted.key.id },
      message: { reactionMessage: { key: { remoteJid: jid(b.number), fromMe: true, id } } },
    });
    await events.next(b.id, 'SEND_MESSAGE', (e) => e.data.key.id === reacted.key.id);

    // The author reacts to its own message too (its key seen from the other side is fromMe false).
    expectStatus(await post(a, '/message/react', { chatId: jid(b.number), messageId: id, emoji: '👨‍👩‍👧' }), 200);
    const family = await events.next(b.id, 'MESSAGE', (e) => e.data.message.reactionMessage?.text === '👨‍👩‍👧');
    expect(family.data.message.reactionMessage.key).toEqual({ remoteJid: jid(a.number), fromMe: false, id });

    expectStatus(await post(b, '/message/react', { chatId: a.number, messageId: id, emoji: '' }), 200);
    await events.next(a.id, 'MESSAGE', (e) => e.data.message.reactionMessage?.text === '' && e.data.message.reactionMessage.key.id === id);

    expectError(await post(b, '/message/react', { chatId: a.number, messageId: id, emoji: 'ok' }), 400, /one emoji/);
    expectError(await post(b, '/message/react', { chatId: a.number, messageId: id, emoji: '👍👍' }), 400, /one emoji/);
    expectError(await post(b, '/message/react', { chatId: a.number, messageId: id }), 400, /emoji/);
    expectError(await post(b, '/message/react', { chatId: a.number, messageId: id, emoji: '👍', extra: 1 }), 400, /extra|additional/i);
    expectError(
      await post(b, '/message/react', { chatId: a.number, messageId: 'NOPE0001', emoji: '👍' }),
      404,
      /message NOPE0001 not found/,
    );
    // The right id in the wrong chat is not found either.
    expectError(await post(b, '/message/react', { chatId: uniqueNumber(), messageId: id, emoji: '👍' }), 404, /not found in chat/);
  });

  it("deletes own messages for everyone; others' messages are refused; the stores show them deleted", async () => {
    const [a, b] = await pair();
    const id = await say(a, b, 'regret this');

    expectError(await post(b, '/message/delete', { chatId: a.number, messageId: id }), 403, /not sent by this instance/);
    const revoked = expectStatus(await post(a, '/message/delete', { chatId: b.number, messageId: id }), 200);
    expect(revoked.message).toEqual({ protocolMessage: { key: { remoteJid: jid(b.number), fromMe: true, id }, type: 'REVOKE' } });
    const seen = await events.next(b.id, 'MESSAGE', (e) => e.data.message.protocolMessage?.type === 'REVOKE');
    expect(seen.data.message.protocolMessage.key).toEqual({ remoteJid: jid(a.number), fromMe: false, id });

    for (const [who, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const found = await waitForDeleted(who, id);
      expect(found).toMatchObject({ key: { id, remoteJid: jid(other.number) }, messageType: 'revoked', message: {}, deleted: true });
    }
    // The chat histories show it deleted too, as the phones do.
    expect(expectStatus(await get(b, `/chat/history?chatId=${a.number}`), 200).items[0]).toMatchObject({ key: { id }, message: {} });
    expect(expectStatus(await get(a, `/chat/history?chatId=${b.number}`), 200).items[0].message).toEqual({});
    expectError(await post(a, '/message/delete', { chatId: b.number, messageId: id }), 409, /deleted for everyone/);
    expectError(await post(b, '/message/react', { chatId: a.number, messageId: id, emoji: '👍' }), 409, /deleted for everyone/);
    expectError(await post(a, '/message/delete', { chatId: b.number, messageId: 'UNKNOWN1' }), 404, /not found/);
  });

  async function waitForDeleted(who: TestInstance, id: string): Promise<any> {
    for (let i = 0; i < 100; i += 1) {
      const page = expectStatus(await get(who, `/message/find?messageId=${id}`), 200);
      if (page.items[0]?.deleted) return page.items[0];
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`message ${id} never showed as deleted`);
  }

  it("edits own texts within 15 minutes; others' messages, other kinds and late edits are refused", async () => {
    const [a, b] = await pair();
    const id = await say(a, b, 'helo');

    const edited = expectStatus(await post(a, '/message/edit', { chatId: b.number, messageId: id, text: 'hello' }), 200);
    expect(edited.message.protocolMessage).toMatchObject({
      key: { remoteJid: jid(b.number), fromMe: true, id },
      type: 'MESSAGE_EDIT',
      editedMessage: { conversation: 'hello' },
    });
    const seen = await events.next(b.id, 'MESSAGE', (e) => e.data.message.editedMessage !== undefined);
    expect(seen.data.message.editedMessage.message.protocolMessage).toMatchObject({
      key: { remoteJid: jid(a.number), fromMe: false, id },
      type: 'MESSAGE_EDIT',
      editedMessage: { conversation: 'hello' },
    });
    await expect
      .poll(async () => expectStatus(await get(b, `/message/find?messageId=${id}`), 200).items[0]?.message)
      .toEqual({ conversation: 'hello' });
    expect(expectStatus(await get(a, `/message/find?messageId=${id}`), 200).items[0]).toMatchObject({
      message: { conversation: 'hello' },
      deleted: false,
      messageType: 'conversation',
    });

    expect(expectStatus(await get(b, `/chat/history?chatId=${a.number}`), 200).items[0].message).toEqual({ conversation: 'hello' });
    expectError(
      await post(b, '/message/edit', { chatId: a.number, messageId: id, text: 'mine now' }),
      403,
      /only your own messages can be edited/,
    );
    const location = expectStatus(await post(a, '/send/location', { number: b.number, latitude: 1, longitude: 2 }), 200);
    expectError(
      await post(a, '/message/edit', { chatId: b.number, messageId: location.key.id, text: 'x' }),
      409,
      /only text messages can be edited/,
    );
    expectError(await post(a, '/message/edit', { chatId: b.number, messageId: id, text: '' }), 400, /text/);

    offsetMs += 16 * 60_000;
    expectError(await post(a, '/message/edit', { chatId: b.number, messageId: id, text: 'too late' }), 409, /allows edits for 15 minutes/);
    const fresh = await say(a, b, 'just now');
    expectStatus(await post(a, '/message/edit', { chatId: b.number, messageId: fresh, text: 'still in time' }), 200);
  });

  it('marks received messages read: the sender gets READ_RECEIPT; own messages and unknown ids are refused', async () => {
    const [a, b] = await pair();
    const first = await say(a, b, 'one');
    const second = await say(a, b, 'two');
    const third = await say(a, b, 'three');
    expect(expectStatus(await get(b, `/chat/info?chatId=${a.number}`), 200).unreadCount).toBe(3);

    const read = expectStatus(await post(b, '/message/read', { chatId: a.number, messageIds: [first, second] }), 200);
    expect(read).toEqual({ chatId: jid(a.number), messageIds: [first, second] });
    for (const id of [first, second]) {
      const receipt = await events.next(a.id, 'READ_RECEIPT', (e) => e.data.key.id === id);
      expect(receipt.data).toMatchObject({ key: { remoteJid: jid(b.number), fromMe: true, id }, receipt: 'read' });
      expect(receipt.data.readTimestamp).toBeGreaterThan(0);
    }
    expect(events.of(a.id, 'READ_RECEIPT').some((e) => e.data.key.id === third)).toBe(false);
    expect(expectStatus(await get(b, `/chat/info?chatId=${a.number}`), 200).unreadCount).toBe(1);

    expectError(await post(a, '/message/read', { chatId: b.number, messageIds: [first] }), 400, /only received messages/);
    expectError(await post(b, '/message/read', { chatId: a.number, messageIds: [third, 'UNKNOWN2'] }), 404, /UNKNOWN2 not found/);
    expectError(await post(b, '/message/read', { chatId: a.number, messageIds: [] }), 400, /messageIds/);

    // With read receipts turned off, reading still clears the unread count but tells the sender nothing.
    expectStatus(await post(b, '/user/privacy', { readReceipts: 'none' }), 200);
    expectStatus(await post(b, '/message/read', { chatId: a.number, messageIds: [third] }), 200);
    expect(expectStatus(await get(b, `/chat/info?chatId=${a.number}`), 200).unreadCount).toBe(0);
    expect(events.of(a.id, 'READ_RECEIPT').some((e) => e.data.key.id === third)).toBe(false);
  });

  it('shows typing and recording in the chat, then paused after durationMs', async () => {
    const [a, b] = await pair();
    const typing = expectStatus(await post(a, '/message/presence', { chatId: b.number, presence: 'composing', durationMs: 150 }), 200);
    expect(typing).toEqual({ chatId: jid(b.number), presence: 'composing', pausedAfterMs: 150 });
    const composing = await events.next(b.id, 'CHAT_PRESENCE', (e) => e.data.presence === 'composing');
    expect(composing.data).toEqual({ remoteJid: jid(a.number), participant: jid(a.number), presence: 'composing' });
    await events.next(b.id, 'CHAT_PRESENCE', (e) => e.data.presence === 'paused');

    expectStatus(await post(a, '/message/presence', { chatId: jid(b.number), presence: 'recording' }), 200);
    await events.next(b.id, 'CHAT_PRESENCE', (e) => e.data.presence === 'recording');
    expectError(await post(a, '/message/presence', { chatId: b.number, presence: 'dancing' }), 400, /presence/);
    expectError(await post(a, '/message/presence', { chatId: 'nobody', presence: 'paused' }), 400, /chatId/);
  });

  it('finds stored messages by chat, direction, text and time, paged, newest first', async () => {
    const [a, b] = await pair();
    const c = await connectedInstance(gw, uniqueNumber());
    await say(a, b, 'Alpha 100% sure');
    await say(b, a, 'beta reply');
    await say(a, c, 'alpha to c');
    const image = expectStatus(
      await post(a, '/send/media', { number: b.number, media: { base64: PNG_BASE64 }, caption: 'an ALPHA picture' }),
      200,
    );

    const all = expectStatus(await get(a, '/message/find'), 200);
    expect(all).toMatchObject({ total: 4, offset: 0, limit: 100 });
    const inB = expectStatus(await get(a, `/message/find?chatId=${b.number}`), 200);
    expect(inB.total).toBe(3);
    expect(inB.items[0]).toMatchObject({
      key: { id: image.key.id, fromMe: true },
      messageType: 'imageMessage',
      media: { mimetype: 'image/png', downloadUrl: `/api/v1/message/download/${image.key.id}` },
    });
    expect(
      expectStatus(await get(a, `/message/find?chatId=${b.number}&fromMe=false`), 200).items.map((m: any) => m.message.conversation),
    ).toEqual(['beta reply']);
    const alpha = expectStatus(await get(a, '/message/find?text=alpha'), 200);
    expect(alpha.total).toBe(3);
    expect(expectStatus(await get(a, `/message/find?text=alpha&chatId=${b.number}`), 200).total).toBe(2);
    // LIKE wildcards in the text are literal.
    expect(expectStatus(await get(a, `/message/find?text=${encodeURIComponent('100%')}`), 200).total).toBe(1);
    expect(expectStatus(await get(a, `/message/find?text=${encodeURIComponent('1_0')}`), 200).total).toBe(0);
    const paged = expectStatus(await get(a, '/message/find?limit=2&offset=1'), 200);
    expect(paged).toMatchObject({ total: 4, offset: 1, limit: 2 });
    expect(paged.items.map((m: any) => m.key.id)).toEqual(all.items.slice(1, 3).map((m: any) => m.key.id));

    const now = Math.floor((Date.now() + offsetMs) / 1000);
    expect(expectStatus(await get(a, `/message/find?since=${now - 60}&until=${now + 60}`), 200).total).toBe(4);
    expect(expectStatus(await get(a, `/message/find?since=${now + 60}`), 200).total).toBe(0);
    expect(expectStatus(await get(a, `/message/find?until=${now - 60}`), 200).total).toBe(0);
    expectError(await get(a, `/message/find?since=${now}&until=${now - 1}`), 400, /since must not be after until/);
    expectError(await get(a, '/message/find?fromMe=maybe'), 400, /fromMe/);
    expectError(await get(a, '/message/find?limit=501'), 400, /limit/);
    // Another instance's messages are not found.
    expect(expectStatus(await get(c, `/message/find?messageId=${image.key.id}`), 200).total).toBe(0);
  });

  it('tallies the votes of a poll it sent: latest vote per voter, withdrawn votes dropped', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const [carla, dan] = [uniqueNumber(), uniqueNumber()];
    const poll = expectStatus(
      await post(a, '/send/poll', { number: carla, name: 'Lunch?', options: ['pizza', 'sushi', 'salad'], selectableCount: 2 }),
      200,
    );
    const vote = (from: string, selectedOptions: string[]) =>
      gw.api('POST', '/api/v1/sandbox/poll-votes', {
        key: gw.adminKey,
        body: { from, to: a.number, pollMessageId: poll.key.id, selectedOptions },
      });
    expectStatus(await vote(carla, ['pizza']), 200);
    expectStatus(await vote(carla, ['sushi', 'salad']), 200);

    const results = expectStatus(await get(a, `/message/poll-results?messageId=${poll.key.id}`), 200);
    expect(results).toEqual({
      pollMessageId: poll.key.id,
      chatId: jid(carla),
      name: 'Lunch?',
      selectableCount: 2,
      options: [
        { name: 'pizza', votes: 0, voters: [] },
        { name: 'sushi', votes: 1, voters: [jid(carla)] },
        { name: 'salad', votes: 1, voters: [jid(carla)] },
      ],
      voters: 1,
    });
    expectStatus(await vote(carla, []), 200);
    const withdrawn = expectStatus(await get(a, `/message/poll-results?messageId=${poll.key.id}`), 200);
    expect(withdrawn.voters).toBe(0);
    expect(withdrawn.options.every((o: any) => o.votes === 0)).toBe(true);
    // Votes are not messages of their own in find.
    expect(expectStatus(await get(a, '/message/find'), 200).total).toBe(1);

    const text = expectStatus(await post(a, '/send/text', { number: dan, text: 'not a poll' }), 200);
    expectError(await get(a, `/message/poll-results?messageId=${text.key.id}`), 404, /poll .* not found/);
    expectError(await get(a, '/message/poll-results'), 400, /messageId/);
  });

  it('needs a connected instance to act (409), but finds stored messages offline; admin key refused', async () => {
    const offline = await createInstance(gw);
    expectError(await post(offline, '/message/react', { chatId: uniqueNumber(), messageId: 'X1', emoji: '👍' }), 409, /not connected/);
    expectError(await post(offline, '/message/delete', { chatId: uniqueNumber(), messageId: 'X1' }), 409, /not connected/);
    expectError(await post(offline, '/message/edit', { chatId: uniqueNumber(), messageId: 'X1', text: 'x' }), 409, /not connected/);
    expectError(await post(offline, '/message/read', { chatId: uniqueNumber(), messageIds: ['X1'] }), 409, /not connected/);
    expectError(await post(offline, '/message/presence', { chatId: uniqueNumber(), presence: 'composing' }), 409, /not connected/);
    expect(expectStatus(await get(offline, '/message/find'), 200)).toEqual({ items: [], total: 0, offset: 0, limit: 100 });
    const asAdmin = await gw.api('GET', '/api/v1/message/find', { key: gw.adminKey });
    expect(asAdmin.status).toBe(403);
  });

  it('documents every /message route in the OpenAPI document', async () => {
    const doc = expectStatus(await gw.api('GET', '/api/v1/openapi.json'), 200);
    const routes = [
      ['post', '/message/react'],
      ['post', '/message/presence'],
      ['post', '/message/read'],
      ['post', '/message/delete'],
      ['post', '/message/edit'],
      ['get', '/message/find'],
      ['get', '/message/poll-results'],
    ] as const;
    for (const [method, route] of routes) {
      const operation = doc.paths[`/api/v1${route}`]?.[method];
      expect(operation, route).toBeDefined();
      expect(operation.tags).toEqual(['message']);
      expect(operation.description.length, route).toBeGreaterThan(80);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401']));
    }
  });

  it("in groups: participants see reactions and typing; a member cannot delete another's message", async () => {
    const [a, b] = await pair();
    const group = expectStatus(await post(a, '/group/create', { subject: 'Team', participants: [b.number] }), 201).group;
    const sent = expectStatus(await post(b, '/send/text', { number: group.groupId, text: 'in the group' }), 200);
    await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === sent.key.id);

    expectStatus(await post(a, '/message/react', { chatId: group.groupId, messageId: sent.key.id, emoji: '🎉' }), 200);
    const reaction = await events.next(b.id, 'MESSAGE', (e) => e.data.message.reactionMessage?.text === '🎉');
    expect(reaction.data).toMatchObject({
      key: { remoteJid: group.groupId, fromMe: false },
      participant: jid(a.number),
      message: { reactionMessage: { key: { remoteJid: group.groupId, fromMe: true, id: sent.key.id } } },
    });
    expectError(await post(a, '/message/delete', { chatId: group.groupId, messageId: sent.key.id }), 403, /only your own messages/);
    expectStatus(await post(a, '/message/presence', { chatId: group.groupId, presence: 'composing' }), 200);
    const typing = await events.next(b.id, 'CHAT_PRESENCE', (e) => e.data.remoteJid === group.groupId);
    expect(typing.data).toEqual({ remoteJid: group.groupId, participant: jid(a.number), presence: 'composing' });
  });
});
