/**
 * The WhatsApp driver's MessageOperations at its boundary. Translation: the Baileys content each
 * operation hands to sendMessage, run through Baileys' own message generation (what WhatsApp then
 * receives: reactionMessage, protocolMessage REVOKE / MESSAGE_EDIT). Wire: a linked session's real
 * socket talks to the local WhatsApp stand-in, which records the <chatstate> and <receipt> nodes and
 * answers the privacy and group metadata queries with recorded replies.
 */
import { generateWAMessageContent, getBinaryNodeChild, proto, type BinaryNode, type WAMessageKey } from 'baileys';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MessageTarget } from '../port.js';
import { CONTACT_LID, CONTACT_PN, GROUP, groupNode, PARTICIPANT_LID, PARTICIPANT_PN } from './fixtures/baileys-payloads.js';
import { FakeWaServer, iqChild } from './fixtures/fake-wa-server.js';
import { LinkedSessions, type Linked } from './fixtures/linked-session.js';
import { editContent, isGroupAdmin, reactionContent, revokeContent, waKeyOf } from './message-ops.js';

const ME = '5511999999999@s.whatsapp.net';

function target(key: MessageTarget['key'], extra: Partial<MessageTarget> = {}): MessageTarget {
  return { key, message: { conversation: 'hi' }, messageTimestamp: 1_780_000_000, ...extra };
}

/** What sendMessage builds from a content, before encryption (no media: nothing is uploaded). */
function generated(content: Parameters<typeof generateWAMessageContent>[0]): Promise<proto.IMessage> {
  return generateWAMessageContent(content, { upload: () => Promise.reject(new Error('no upload expected')) });
}

describe('whatsapp message operations: translation', () => {
  it('uses the key Baileys saw when the driver holds the message, else rebuilds it with the group author', () => {
    const original: WAMessageKey = {
      remoteJid: CONTACT_LID,
      remoteJidAlt: CONTACT_PN,
      fromMe: false,
      id: '3EB0TEXT0001',
      addressingMode: 'lid',
    };
    expect(waKeyOf(target({ remoteJid: CONTACT_PN, fromMe: false, id: '3EB0TEXT0001' }), original)).toEqual({
      remoteJid: CONTACT_LID,
      fromMe: false,
      id: '3EB0TEXT0001',
    });
    expect(waKeyOf(target({ remoteJid: GROUP, fromMe: false, id: '3EB0G1' }, { participant: PARTICIPANT_PN }))).toEqual({
      remoteJid: GROUP,
      fromMe: false,
      id: '3EB0G1',
      participant: PARTICIPANT_PN,
    });
    // Own messages never name a participant.
    expect(waKeyOf(target({ remoteJid: GROUP, fromMe: true, id: '3EB0G2' }, { participant: ME }))).toEqual({
      remoteJid: GROUP,
      fromMe: true,
      id: '3EB0G2',
    });
  });

  it('react, remove a reaction, delete and edit become the messages WhatsApp expects', async () => {
    const key = { remoteJid: GROUP, fromMe: false, id: '3EB0G1', participant: PARTICIPANT_LID };

    const reaction = await generated(reactionContent(key, '👍'));
    expect(reaction.reactionMessage).toMatchObject({ key, text: '👍' });
    expect(Number(reaction.reactionMessage?.senderTimestampMs)).toBeGreaterThan(0);
    expect((await generated(reactionContent(key, ''))).reactionMessage).toMatchObject({ key, text: '' });

    const own = { remoteJid: CONTACT_PN, fromMe: true, id: '3EB0MINE0001' };
    const revoke = await generated(revokeContent(own));
    expect(revoke.protocolMessage).toMatchObject({ key: own, type: proto.Message.ProtocolMessage.Type.REVOKE });

    const edit = await generated(editContent(own, 'fixed, see https://example.org'));
    expect(edit.protocolMessage).toMatchObject({
      key: own,
      type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
      editedMessage: { extendedTextMessage: { text: 'fixed, see https://example.org' } },
    });
    // No link preview was fetched for the URL in the new text.
    expect(edit.protocolMessage?.editedMessage?.extendedTextMessage?.matchedText).toBeFalsy();
    expect(Number(edit.protocolMessage?.timestampMs)).toBeGreaterThan(0);
  });

  it('recognises group admins by phone address or LID', () => {
    const participants = [
      { id: PARTICIPANT_LID, phoneNumber: PARTICIPANT_PN, admin: 'admin' as const },
      { id: CONTACT_PN, admin: null },
    ];
    expect(isGroupAdmin({ participants }, ['5511977776666:3@s.whatsapp.net'])).toBe(true);
    expect(isGroupAdmin({ participants }, [PARTICIPANT_LID])).toBe(true);
    expect(isGroupAdmin({ participants }, [CONTACT_PN])).toBe(false);
    expect(isGroupAdmin({ participants: [{ id: ME, admin: 'superadmin' }] }, ['5511999999999:7@s.whatsapp.net'])).toBe(true);
  });
});

describe('whatsapp message operations: on the wire', () => {
  let server: FakeWaServer;
  let sessions: LinkedSessions;
  let linked: Linked;

  beforeAll(async () => {
    server = new FakeWaServer();
    sessions = new LinkedSessions(server, await server.start());
    // Baileys reads the privacy settings once, at login: read receipts are on for this account.
    const privacy = server.onIq((iq) => iq.attrs.xmlns === 'privacy' && iqChild(iq)?.tag === 'privacy', {
      content: [{ tag: 'privacy', attrs: {}, content: [{ tag: 'category', attrs: { name: 'readreceipts', value: 'all' } }] }],
    });
    linked = await sessions.open();
    await linked.connection.waitForNode((n) => n.tag === 'iq' && n.attrs.xmlns === 'privacy');
    while (privacy.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    server.clearIqHooks();
  });
  afterEach(() => server.clearIqHooks());
  afterAll(async () => {
    await sessions.stop();
    await server.stop();
  });

  const sent = (test: (node: BinaryNode) => boolean) => linked.connection.waitForNode(test);

  it('typing, recording and paused go out as <chatstate> nodes to the chat', async () => {
    const ops = linked.session.messages;
    await ops.sendPresence(CONTACT_PN, 'composing');
    const composing = await sent((n) => n.tag === 'chatstate' && getBinaryNodeChild(n, 'composing') !== undefined);
    expect(composing.attrs.to).toBe(CONTACT_PN);
    expect(getBinaryNodeChild(composing, 'composing')?.attrs).toEqual({});

    await ops.sendPresence(GROUP, 'recording');
    const recording = await sent((n) => n.tag === 'chatstate' && n.attrs.to === GROUP);
    expect(getBinaryNodeChild(recording, 'composing')?.attrs).toEqual({ media: 'audio' });

    await ops.sendPresence(CONTACT_PN, 'paused');
    await sent((n) => n.tag === 'chatstate' && getBinaryNodeChild(n, 'paused') !== undefined);
  });

  it('read receipts: one <receipt type="read"> per chat and author, the other ids listed', async () => {
    const ops = linked.session.messages;
    await ops.markRead(CONTACT_PN, [
      target({ remoteJid: CONTACT_PN, fromMe: false, id: '3EB0READ0001' }),
      target({ remoteJid: CONTACT_PN, fromMe: false, id: '3EB0READ0002' }),
    ]);
    const receipt = await sent((n) => n.tag === 'receipt' && n.attrs.id === '3EB0READ0001');
    expect(receipt.attrs).toMatchObject({ to: CONTACT_PN, type: 'read' });
    expect(Number(receipt.attrs.t)).toBeGreaterThan(0);
    const list = getBinaryNodeChild(receipt, 'list');
    expect(Array.isArray(list?.content) ? list.content.map((item) => item.attrs.id) : []).toEqual(['3EB0READ0002']);

    await ops.markRead(GROUP, [target({ remoteJid: GROUP, fromMe: false, id: '3EB0READG001' }, { participant: PARTICIPANT_PN })]);
    const inGroup = await sent((n) => n.tag === 'receipt' && n.attrs.id === '3EB0READG001');
    expect(inGroup.attrs).toMatchObject({ to: GROUP, participant: PARTICIPANT_PN, type: 'read' });
  });

  it("refuses to delete others' messages outside groups, and in groups where this account is not an admin", async () => {
    const ops = linked.session.messages;
    await expect(ops.delete(target({ remoteJid: CONTACT_PN, fromMe: false, id: '3EB0THEIRS01' }))).rejects.toMatchObject({
      status: 403,
      message: expect.stringMatching(/only group admins/),
    });

    const groupId = '120363000000077777@g.us';
    const metadata = server.onIq((iq) => iq.attrs.xmlns === 'w:g2' && iq.attrs.to === groupId && iqChild(iq)?.tag === 'query', {
      content: [groupNode({ id: groupId, participants: [{ jid: ME }, { jid: CONTACT_PN, type: 'superadmin' }] })],
    });
    await expect(
      ops.delete(target({ remoteJid: groupId, fromMe: false, id: '3EB0THEIRS02' }, { participant: CONTACT_PN })),
    ).rejects.toMatchObject({ status: 403 });
    expect(metadata.calls).toHaveLength(1);
    // Neither refusal started a send (a send first looks up the recipients' devices).
    expect(linked.connection.received.some((n) => n.tag === 'message' || (n.tag === 'iq' && n.attrs.xmlns === 'usync'))).toBe(false);
  });

  it("react, edit and delete go through Baileys' sendMessage (device look-up first) and are reported as SEND_MESSAGE", async () => {
    const ops = linked.session.messages;
    const theirs = target({ remoteJid: CONTACT_PN, fromMe: false, id: '3EB0THEIRS09' });
    const mine = target({ remoteJid: CONTACT_PN, fromMe: true, id: '3EB0MINE0009' });
    const reacted = await ops.react(theirs, '🎉');
    const edited = await ops.edit(mine, 'better words');
    const revoked = await ops.delete(mine);

    expect(reacted).toMatchObject({
      key: { remoteJid: CONTACT_PN, fromMe: true },
      status: 'SENT',
      message: { reactionMessage: { key: { remoteJid: CONTACT_PN, fromMe: false, id: '3EB0THEIRS09' }, text: '🎉' } },
    });
    expect(edited.message).toMatchObject({
      protocolMessage: {
        key: { id: '3EB0MINE0009', fromMe: true },
        type: 'MESSAGE_EDIT',
        editedMessage: { extendedTextMessage: { text: 'better words' } },
      },
    });
    expect(revoked.message).toMatchObject({ protocolMessage: { key: { id: '3EB0MINE0009', fromMe: true }, type: 'REVOKE' } });
    // WhatsApp was asked for the contact's devices (the stand-in knows none, so no <message> follows).
    const usync = await sent((n) => n.tag === 'iq' && n.attrs.xmlns === 'usync');
    expect(JSON.stringify(usync.content, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString() : v))).toContain(
      CONTACT_PN,
    );
    const reported = linked.host.events.filter((e) => e.type === 'SEND_MESSAGE').map((e) => (e.data.key as { id: string }).id);
    expect(reported).toEqual(expect.arrayContaining([reacted.key.id, edited.key.id, revoked.key.id]));
  });

  it('answers 409 once the connection is closed', async () => {
    const other = await sessions.open();
    other.connection.drop();
    await other.host.connection('DISCONNECTED');
    await expect(other.session.messages.sendPresence(CONTACT_PN, 'composing')).rejects.toMatchObject({
      status: 409,
      code: 'instance_not_connected',
    });
  });
});
