import { describe, expect, it } from 'vitest';
import { dropSchema } from '../src/storage/db.js';
import { DIALECTS, PG_URL, connectedInstance, newSchemaName, recordEvents, startGateway, uniqueNumber } from './support/gateway.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe.each(DIALECTS)('restart on %s', (dialect) => {
  it('brings connected sandbox instances back connected, able to send and receive', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-restart-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const a = await connectedInstance(first, uniqueNumber());
    const b = await connectedInstance(first, uniqueNumber());
    await first.stop();

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      const events = recordEvents(second);
      const status = await second.api('GET', '/api/v1/instance/status', { key: a.token });
      expect(status.body).toMatchObject({ status: 'CONNECTED', number: a.number });
      const sent = await second.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: 'after restart' } });
      expect(sent.status).toBe(200);
      const got = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === sent.body.key.id);
      expect(got.data.message.conversation).toBe('after restart');
      // No new pairing was needed.
      expect(events.of(a.id, 'QRCODE')).toEqual([]);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('keeps the history a number linked again brought to its new instance', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-restart-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const events = recordEvents(first);
    const a = await connectedInstance(first, uniqueNumber());
    const contact = uniqueNumber();
    const said = await first.api('POST', '/api/v1/sandbox/messages', {
      key: first.adminKey,
      body: { from: contact, to: a.number, text: 'before' },
    });
    expect(said.status).toBe(200);
    expect((await first.api('POST', '/api/v1/send/text', { key: a.token, body: { number: contact, text: 'reply' } })).status).toBe(200);
    expect((await first.api('POST', '/api/v1/instance/logout', { key: a.token })).status).toBe(200);
    // Linked again, to another instance: the history sync brings the chat over.
    const c = await connectedInstance(first, a.number!);
    await events.next(c.id, 'HISTORY_SYNC', (e) => e.data.progress === 100);
    await first.stop();

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      const history = await second.api('GET', `/api/v1/chat/history?chatId=${contact}`, { key: c.token });
      expect(history.status).toBe(200);
      expect(history.body.items.map((m: any) => m.message.conversation).sort()).toEqual(['before', 'reply']);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('keeps sandbox chat history across a restart, without what was cleared or deleted', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-restart-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const a = await connectedInstance(first, uniqueNumber());
    const [kept, cleared, deleted] = [uniqueNumber(), uniqueNumber(), uniqueNumber()];
    const contactSays = (gw: typeof first, from: string, text: string) =>
      gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from, to: a.number, text } });
    for (const from of [kept, cleared, deleted]) {
      expect((await contactSays(first, from, `hello from ${from}`)).status).toBe(200);
    }
    // A named contact, and a group with no message in it yet.
    expect(
      (await first.api('POST', '/api/v1/sandbox/accounts', { key: first.adminKey, body: { number: kept, pushName: 'Kept Contact' } }))
        .status,
    ).toBe(200);
    const group = await first.api('POST', '/api/v1/group/create', { key: a.token, body: { subject: 'Quiet', participants: [kept] } });
    expect(group.status).toBe(201);
    expect((await first.api('POST', '/api/v1/send/text', { key: a.token, body: { number: kept, text: 'my answer' } })).status).toBe(200);
    // Clearing and deleting happen a second later than the messages, as on a phone.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await first.api('POST', '/api/v1/chat/clear', { key: a.token, body: { chatId: cleared } })).status).toBe(200);
    expect((await first.api('POST', '/api/v1/chat/delete', { key: a.token, body: { chatId: deleted } })).status).toBe(200);
    await first.stop();

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      const history = await second.api('GET', `/api/v1/chat/history?chatId=${kept}`, { key: a.token });
      expect(history.status).toBe(200);
      expect(history.body.items.map((m: any) => m.message.conversation)).toEqual(['my answer', `hello from ${kept}`]);
      const list = await second.api('GET', '/api/v1/chat/list', { key: a.token });
      const byId = new Map(list.body.items.map((c: any) => [c.chatId, c]));
      expect((byId.get(`${kept}@s.whatsapp.net`) as any)?.lastMessage?.message?.conversation).toBe('my answer');
      expect(byId.has(`${deleted}@s.whatsapp.net`)).toBe(false);
      expect(byId.has(group.body.group.groupId)).toBe(true);
      // Profile names survive too: the contact's next message carries it.
      const named = await contactSays(second, kept, 'named');
      expect(named.status).toBe(200);
      const seen = await second.api('GET', `/api/v1/chat/history?chatId=${kept}`, { key: a.token });
      expect(seen.body.items[0]).toMatchObject({ pushName: 'Kept Contact', message: { conversation: 'named' } });
      const clearedHistory = await second.api('GET', `/api/v1/chat/history?chatId=${cleared}`, { key: a.token });
      expect(clearedHistory.body.items).toEqual([]);
      // A deleted chat comes back with its next message only.
      expect((await contactSays(second, deleted, 'again')).status).toBe(200);
      const back = await second.api('GET', `/api/v1/chat/history?chatId=${deleted}`, { key: a.token });
      expect(back.body.items.map((m: any) => m.message.conversation)).toEqual(['again']);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('keeps unread counts across a restart: what was read stays read, what came after stays unread', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-restart-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const a = await connectedInstance(first, uniqueNumber());
    const [read, partly, answered, untouched] = [uniqueNumber(), uniqueNumber(), uniqueNumber(), uniqueNumber()];
    const says = async (gw: typeof first, from: string, text: string) => {
      const sent = await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from, to: a.number, text } });
      expect(sent.status).toBe(200);
      return (sent.body as { key: { id: string } }).key.id;
    };
    // Read as a whole chat, then one more arrives.
    await says(first, read, 'r1');
    await says(first, read, 'r2');
    expect((await first.api('POST', '/api/v1/chat/mark-read', { key: a.token, body: { chatId: read } })).status).toBe(200);
    await says(first, read, 'r3');
    // Read up to the second of three messages.
    await says(first, partly, 'p1');
    const p2 = await says(first, partly, 'p2');
    await says(first, partly, 'p3');
    expect((await first.api('POST', '/api/v1/message/read', { key: a.token, body: { chatId: partly, messageIds: [p2] } })).status).toBe(
      200,
    );
    // Answered (writing in a chat reads it), then two more arrive.
    await says(first, answered, 'a1');
    expect((await first.api('POST', '/api/v1/send/text', { key: a.token, body: { number: answered, text: 'my answer' } })).status).toBe(
      200,
    );
    await says(first, answered, 'a2');
    await says(first, answered, 'a3');
    // Never read.
    await says(first, untouched, 'u1');
    await says(first, untouched, 'u2');
    const unreadOf = async (gw: typeof first) => {
      const list = await gw.api('GET', '/api/v1/chat/list', { key: a.token });
      expect(list.status).toBe(200);
      const byId = new Map((list.body.items as { chatId: string; unreadCount: number }[]).map((c) => [c.chatId, c.unreadCount]));
      return [read, partly, answered, untouched].map((n) => byId.get(`${n}@s.whatsapp.net`));
    };
    const expected = [1, 1, 2, 2];
    expect(await unreadOf(first)).toEqual(expected);
    await first.stop();

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      expect(await unreadOf(second)).toEqual(expected);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
