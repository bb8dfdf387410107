/**
 * Deletions, edits and poll votes that arrive from WhatsApp change the stored messages: recorded
 * Baileys payloads go through the driver's inbound translation (translate-in.ts), then through
 * MessageUpdates into the real message store, on SQLite and on PostgreSQL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { proto, type WAMessage } from 'baileys';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSchemaName, PG_URL } from '../../test/support/gateway.js';
import { LocalMediaStore } from '../media/store.js';
import { MessageStore } from '../message-store/store.js';
import type { CanonicalEvent } from '../network/port.js';
import * as F from '../network/whatsapp/fixtures/baileys-payloads.js';
import { storageWithInstance } from '../network/whatsapp/fixtures/harness.js';
import { pollVoteData, upsertEvents, type InboundContext } from '../network/whatsapp/translate-in.js';
import { dropSchema, type Storage } from '../storage/db.js';
import { MessageUpdates } from './updates.js';

/** Knows Maria's LID, as the session's directory would after the first message. */
const ctx: InboundContext = {
  now: () => 1_780_002_000_000,
  addresses: {
    resolve: (jid, alt) =>
      jid.startsWith(F.CONTACT_LID.split('@')[0]!) ? { jid: alt ?? F.CONTACT_PN, lid: F.CONTACT_LID } : { jid: jid.replace(/:\d+@/, '@') },
  },
};

function inbound(...messages: WAMessage[]): CanonicalEvent[] {
  return upsertEvents({ type: 'notify', messages }, ctx, () => false);
}

function received(fields: Record<string, unknown>): WAMessage {
  return proto.WebMessageInfo.fromObject(fields) as WAMessage;
}

/** An edit as WhatsApp delivers it: the protocol message inside `editedMessage`. */
function editOf(id: string, chat: string, targetId: string, text: string, fromMe = false): WAMessage {
  return received({
    key: { remoteJid: chat, fromMe, id },
    messageTimestamp: 1_780_000_700,
    message: {
      editedMessage: {
        message: {
          protocolMessage: {
            key: { remoteJid: chat, fromMe, id: targetId },
            type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
            editedMessage: { conversation: text },
            timestampMs: 1_780_000_700_000,
          },
        },
      },
    },
  });
}

describe.each(['sqlite', 'postgres'] as const)('message updates from WhatsApp payloads (%s)', (dialect) => {
  let storage: Storage;
  let instanceId: string;
  let store: MessageStore;
  let updates: MessageUpdates;
  let mediaDir: string;
  const schema = dialect === 'postgres' ? newSchemaName() : undefined;

  beforeAll(async () => {
    ({ storage, instanceId } = await storageWithInstance(dialect === 'postgres' ? PG_URL : 'sqlite::memory:', schema));
    store = new MessageStore(storage.db);
    mediaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-updates-'));
    const media = new LocalMediaStore(mediaDir);
    await media.start();
    updates = new MessageUpdates(store, media, { now: () => 1_780_002_000_000 }, pino({ level: 'silent' }));
  });
  afterAll(async () => {
    await storage.close();
    if (schema) await dropSchema(PG_URL, schema);
    fs.rmSync(mediaDir, { recursive: true, force: true });
  });

  /** Stores what a MESSAGE event carries, as the recorder does. */
  async function keep(event: CanonicalEvent): Promise<void> {
    const data = event.data as {
      key: { remoteJid: string; fromMe: boolean; id: string };
      message: Record<string, unknown>;
      messageTimestamp: number;
      participant?: string;
    };
    await store.save({
      instanceId,
      key: data.key,
      messageType: Object.keys(data.message)[0]!,
      message: data.message,
      messageTimestamp: data.messageTimestamp,
      createdAt: 1,
      ...(data.participant ? { participant: data.participant } : {}),
    });
  }

  it('a revoke from the author deletes the stored message; one from someone else in a person chat is ignored', async () => {
    const [text] = inbound(F.textFromLid);
    await keep(text!);
    // Someone else claims to revoke Maria's message in another chat: nothing changes.
    const forged = inbound(
      received({
        key: { remoteJid: '5511955554444@s.whatsapp.net', fromMe: false, id: '3EB0FORGED01' },
        messageTimestamp: 1_780_000_310,
        message: {
          protocolMessage: {
            type: proto.Message.ProtocolMessage.Type.REVOKE,
            key: { remoteJid: '5511955554444@s.whatsapp.net', fromMe: false, id: '3EB0TEXT0001' },
          },
        },
      }),
    );
    await updates.record(instanceId, forged[0]!);
    expect((await store.find(instanceId, '3EB0TEXT0001'))?.message).toEqual({ conversation: 'olá' });

    const revoke = inbound(F.revoke);
    expect(revoke[0]?.data.message).toEqual({
      protocolMessage: { key: { remoteJid: F.CONTACT_PN, fromMe: false, id: '3EB0TEXT0001' }, type: 'REVOKE' },
    });
    await updates.record(instanceId, revoke[0]!);
    expect(await store.find(instanceId, '3EB0TEXT0001')).toMatchObject({ messageType: 'revoked', message: {} });
  });

  it("an edit by the author replaces the text in the shape of the original; edits of others' messages are ignored", async () => {
    await store.save({
      instanceId,
      key: { remoteJid: F.CONTACT_PN, fromMe: false, id: '3EB0TEXT0002' },
      messageType: 'extendedTextMessage',
      message: { extendedTextMessage: { text: 'teh plan', contextInfo: { stanzaId: 'Q1' } } },
      messageTimestamp: 1_780_000_650,
      createdAt: 1,
    });
    await store.save({
      instanceId,
      key: { remoteJid: F.CONTACT_PN, fromMe: true, id: '3EB0MINE0002' },
      messageType: 'conversation',
      message: { conversation: 'my text' },
      messageTimestamp: 1_780_000_660,
      createdAt: 1,
    });

    const [edit] = inbound(editOf('3EB0EDIT0001', F.CONTACT_PN, '3EB0TEXT0002', 'the plan'));
    expect(edit?.data.message).toMatchObject({
      editedMessage: { message: { protocolMessage: { type: 'MESSAGE_EDIT', editedMessage: { conversation: 'the plan' } } } },
    });
    await updates.record(instanceId, edit!);
    expect((await store.find(instanceId, '3EB0TEXT0002'))?.message).toEqual({
      extendedTextMessage: { text: 'the plan', contextInfo: { stanzaId: 'Q1' } },
    });

    // The contact cannot edit this account's own message.
    const [forged] = inbound(editOf('3EB0EDIT0002', F.CONTACT_PN, '3EB0MINE0002', 'hijacked'));
    await updates.record(instanceId, forged!);
    expect((await store.find(instanceId, '3EB0MINE0002'))?.message).toEqual({ conversation: 'my text' });
  });

  it('keeps decrypted poll votes, latest per voter, for the poll results', async () => {
    const pollKey = { remoteJid: F.CONTACT_PN, fromMe: true, id: '3EB0POLL0001' };
    const voteData = (id: string, at: number, chosen: string[]) =>
      pollVoteData(
        received({
          key: { remoteJid: F.CONTACT_PN, fromMe: false, id },
          messageTimestamp: at,
          message: { pollUpdateMessage: { pollCreationMessageKey: pollKey } },
        }),
        pollKey,
        chosen,
        [],
        ctx.addresses,
      );
    const vote = (id: string, at: number, chosen: string[]): CanonicalEvent => ({ type: 'MESSAGE', data: voteData(id, at, chosen) });
    await updates.record(instanceId, vote('3EB0VOTE0001', 1_780_000_800, ['pizza']));
    await updates.record(instanceId, vote('3EB0VOTE0002', 1_780_000_900, ['sushi', 'salad']));
    await updates.record(instanceId, {
      type: 'MESSAGE',
      data: { ...voteData('3EB0VOTE0003', 1_780_000_950, []), pollVote: { pollKey, decrypted: false, reason: 'decryption_failed' } },
    });

    expect(await store.pollVotes(instanceId, '3EB0POLL0001')).toEqual([
      { voter: F.CONTACT_PN, selectedOptions: ['sushi', 'salad'], messageTimestamp: 1_780_000_900 },
    ]);
    // Votes are not messages: they are neither found by id nor listed.
    expect(await store.find(instanceId, '3EB0VOTE0002')).toBeUndefined();
    expect(
      (await store.search(instanceId, { remoteJid: F.CONTACT_PN }, { offset: 0, limit: 50 })).items.map((m) => m.key.id),
    ).not.toContain('3EB0VOTE0002');
  });
});
