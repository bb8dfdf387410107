/**
 * /mcp end to end: the official SDK client (Streamable HTTP) against a real gateway with sandbox
 * instances; what a tool sends arrives at the other sandbox instance.
 */
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSamples, type Samples } from '../../test/support/media.js';
import { loadConfig } from '../config.js';
import type { FastifyRequest } from 'fastify';
import { errors } from '../errors.js';
import { emptyResolvers } from '../http/auth.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import { AdminActingKeys } from './rest.js';
import { checkHostAndOrigin, mcpCallerOf } from './routes.js';
import { TOOLS } from './tools.js';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';

let gw: TestGateway;
let events: RecordedEvents;
let samples: Samples;
let a: TestInstance;
let b: TestInstance;
const clients: Client[] = [];

async function connect(key: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'waygate-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}`, ...headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

type ToolResult = { isError?: boolean; content: any[]; structuredContent?: any };
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A raw HTTP request to /mcp with any headers (fetch cannot set Host). */
function rawPost(
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  const url = new URL(`${gw.url}/mcp`);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/mcp',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': Buffer.byteLength(payload),
          ...headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text, headers: response.headers }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** The JSON-RPC message of an answer sent as JSON or as one SSE event. */
function rpcOf(text: string): any {
  const data = text.split('\n').find((line) => line.startsWith('data: '));
  return JSON.parse(data ? data.slice(6) : text);
}

const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

beforeAll(async () => {
  // A dropped sandbox instance stays down (the failover test moves the serving member).
  gw = await startGateway({ env: { SANDBOX_RECONNECT_DELAY_MS: '60000' } });
  events = recordEvents(gw);
  samples = await makeSamples();
  a = await connectedInstance(gw, uniqueNumber());
  b = await connectedInstance(gw, uniqueNumber());
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await gw?.stop();
});

describe('MCP server at /mcp', () => {
  it('lists tools with input schemas, descriptions and annotations; instance keys see no admin tools', async () => {
    const client = await connect(a.token);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      'list_chats',
      'search_chats',
      'get_chat',
      'get_message_context',
      'find_messages',
      'search_contacts',
      'send_text',
      'send_media',
      'send_location',
      'send_contact',
      'send_poll',
      'react',
      'mark_read',
      'send_typing',
      'list_groups',
      'get_group',
      'download_media',
      'wait_for_message',
      'get_instance_status',
      'connect_instance',
      'get_qr',
      'pair_with_code',
    ]) {
      expect(names).toContain(name);
    }
    expect(names).not.toContain('list_instances');
    expect(names).not.toContain('create_instance');
    const sendText = tools.find((t) => t.name === 'send_text')!;
    expect(sendText.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['number', 'text']) });
    expect(sendText.inputSchema.properties).not.toHaveProperty('instanceId');
    expect(sendText.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    expect(tools.find((t) => t.name === 'list_chats')!.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    for (const tool of tools) {
      expect(tool.description).toBeTruthy();
      expect(tool.description!.includes('\n')).toBe(false);
    }
  });

  it('every tool names REST routes the gateway has (what decides which tools a failover-group token gets)', () => {
    for (const tool of TOOLS) {
      expect(tool.routes.length, tool.name).toBeGreaterThan(0);
      for (const route of tool.routes) {
        const [method, path] = route.split(' ') as ['GET' | 'POST', string];
        expect(gw.app.hasRoute({ method, url: `/api/v1${path}` }), `${tool.name}: ${route}`).toBe(true);
      }
    }
  });

  it('sends a text through a tool; the other sandbox instance receives it; chats and messages read back', async () => {
    const client = await connect(a.token);
    const text = `hello from mcp ${Date.now()}`;
    const result = await call(client, 'send_text', { number: b.number, text });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ key: { fromMe: true }, status: 'SENT' });
    const received = await events.next(b.id, 'MESSAGE', (e) => e.data.message?.conversation === text);
    expect(received.data.key.remoteJid).toBe(`${a.number}@s.whatsapp.net`);

    const chats = await call(client, 'list_chats');
    expect(chats.structuredContent.items.map((c: any) => c.chatId)).toContain(`${b.number}@s.whatsapp.net`);
    const chat = await call(client, 'get_chat', { chatId: b.number });
    expect(chat.isError).toBeFalsy();
    expect(chat.content[0].text).toContain(text);
    expect(chat.structuredContent.messages[0].key.id).toBe(result.structuredContent.key.id);
    const found = await call(client, 'find_messages', { text: 'hello from mcp' });
    expect(found.structuredContent.items.some((m: any) => m.key.id === result.structuredContent.key.id)).toBe(true);
    const searched = await call(client, 'search_chats', { query: b.number! });
    expect(searched.structuredContent.items.length).toBeGreaterThan(0);

    // B answers twice; the context of the first answer holds the message before and after it.
    const bClient = await connect(b.token);
    const first = await call(bClient, 'send_text', {
      number: a.number,
      text: 'answer one',
      quoted: { id: result.structuredContent.key.id },
    });
    await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === first.structuredContent.key.id);
    const second = await call(bClient, 'send_text', { number: a.number, text: 'answer two' });
    await events.next(a.id, 'MESSAGE', (e) => e.data.key.id === second.structuredContent.key.id);
    const context = await call(client, 'get_message_context', {
      chatId: b.number,
      messageId: first.structuredContent.key.id,
      before: 1,
      after: 1,
    });
    expect(context.isError).toBeFalsy();
    expect(context.structuredContent.messages.map((m: any) => m.key.id)).toEqual([
      result.structuredContent.key.id,
      first.structuredContent.key.id,
      second.structuredContent.key.id,
    ]);
    expect(context.content[0].text).toMatch(/>> .*answer one/);

    // Paging back one message at a time walks the whole chat once, even within one second.
    const seen: string[] = [];
    let cursor: Record<string, unknown> = {};
    for (let i = 0; i < 10; i += 1) {
      const page = await call(client, 'get_chat', { chatId: b.number, limit: 1, ...cursor });
      seen.push(...page.structuredContent.messages.map((m: any) => m.key.id));
      if (!page.structuredContent.next) break;
      cursor = page.structuredContent.next;
    }
    const all = await call(client, 'find_messages', { chatId: b.number, limit: 100 });
    expect(seen).toEqual(all.structuredContent.items.map((m: any) => m.key.id));

    const contacts = await call(client, 'search_contacts', { query: b.number!.slice(-6) });
    expect(contacts.structuredContent.items.map((c: any) => c.number)).toContain(b.number);

    // An @lid id (as message keys carry it) resolves to the phone number behind it.
    const resolvedB = await gw.api('POST', '/api/v1/user/resolve', { key: a.token, body: { ids: [b.number] } });
    const lid = resolvedB.body.items[0].lid as string;
    expect(lid).toMatch(/@lid$/);
    const byLid = await call(client, 'search_contacts', { query: lid });
    expect(byLid.structuredContent.items).toEqual([expect.objectContaining({ jid: `${b.number}@s.whatsapp.net`, number: b.number, lid })]);
    expect(byLid.content[0].text).toContain(b.number);
    const unknown = await call(client, 'search_contacts', { query: '999999999999999@lid' });
    expect(unknown.structuredContent.items).toEqual([]);
    expect(unknown.content[0].text).toMatch(/not revealed the phone number/);
  });

  it('sends the other kinds: location, contact, poll, reaction, read marks and typing', async () => {
    const client = await connect(a.token);
    const location = await call(client, 'send_location', { number: b.number, latitude: -23.5, longitude: -46.6, name: 'Paulista' });
    expect(location.isError).toBeFalsy();
    await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === location.structuredContent.key.id && e.data.message.locationMessage);
    const contact = await call(client, 'send_contact', {
      number: b.number,
      contacts: [{ fullName: 'Ana', phones: [{ number: '5511999990000' }] }],
    });
    await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === contact.structuredContent.key.id && e.data.message.contactMessage);
    const poll = await call(client, 'send_poll', { number: b.number, name: 'Lunch?', options: ['yes', 'no'] });
    await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === poll.structuredContent.key.id);
    const reaction = await call(client, 'react', { chatId: b.number, messageId: poll.structuredContent.key.id, emoji: '👍' });
    expect(reaction.isError).toBeFalsy();
    await events.next(b.id, 'MESSAGE', (e) => e.data.message.reactionMessage?.text === '👍');
    const typing = await call(client, 'send_typing', { chatId: b.number, presence: 'composing' });
    expect(typing.isError).toBeFalsy();
    await events.next(b.id, 'CHAT_PRESENCE', (e) => JSON.stringify(e.data).includes('composing'));

    const bClient = await connect(b.token);
    const read = await call(bClient, 'mark_read', { chatId: a.number, messageIds: [poll.structuredContent.key.id] });
    expect(read.isError).toBeFalsy();
    await events.next(a.id, 'READ_RECEIPT', (e) => JSON.stringify(e.data).includes(poll.structuredContent.key.id));
  });

  it('gives media as image content, not base64 in text', async () => {
    const client = await connect(a.token);
    const sent = await call(client, 'send_media', {
      number: b.number,
      media: { base64: samples.png.toString('base64') },
      caption: 'a picture',
    });
    expect(sent.isError).toBeFalsy();
    const received = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === sent.structuredContent.key.id);
    const bClient = await connect(b.token);
    const media = await call(bClient, 'download_media', { messageId: received.data.key.id });
    expect(media.isError).toBeFalsy();
    const image = media.content.find((c) => c.type === 'image');
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(Buffer.from(image.data, 'base64').equals(samples.png)).toBe(true);
    for (const part of media.content.filter((c) => c.type === 'text')) expect(part.text.length).toBeLessThan(500);
    const resource = await bClient.readResource({ uri: `waygate://instances/${b.id}/media/${received.data.key.id}` });
    expect(resource.contents[0]).toMatchObject({ mimeType: 'image/png', blob: samples.png.toString('base64') });
  });

  it('waits for the next incoming message, and returns at once those that came after a given message', async () => {
    const bClient = await connect(b.token);
    const aClient = await connect(a.token);
    let answered = false;
    const waiting = call(bClient, 'wait_for_message', { chatId: a.number, timeoutSeconds: 20 }).finally(() => (answered = true));
    // The wait starts once the call reaches the server: keep writing until it answers.
    const sentIds = new Map<string, string>();
    let sendResult: ToolResult | undefined;
    for (let i = 0; !answered && i < 50; i += 1) {
      const text = `are you there ${i} ${Date.now()}`;
      sendResult = await call(aClient, 'send_text', { number: b.number, text });
      sentIds.set(sendResult.structuredContent.key.id, text);
      await Promise.race([waiting, new Promise((resolve) => setTimeout(resolve, 200))]);
    }
    const answer = await waiting;
    expect(answer.isError).toBeFalsy();
    expect(answer.structuredContent).toMatchObject({ timedOut: false });
    const got = answer.structuredContent.messages[0].key.id;
    expect(sentIds.has(got)).toBe(true);
    expect(answer.content[0].text).toContain(sentIds.get(got));

    // B answers; waiting after A's message returns that answer at once, however late A asks.
    const reply = await call(bClient, 'send_text', { number: a.number, text: 'yes, here' });
    const late = await call(aClient, 'wait_for_message', {
      chatId: b.number,
      afterMessageId: sendResult!.structuredContent.key.id,
      timeoutSeconds: 1,
    });
    expect(late.structuredContent.timedOut).toBe(false);
    expect(late.structuredContent.messages.map((m: any) => m.key.id)).toEqual([reply.structuredContent.key.id]);
    const none = await call(aClient, 'wait_for_message', {
      chatId: b.number,
      afterMessageId: reply.structuredContent.key.id,
      timeoutSeconds: 1,
    });
    expect(none.structuredContent).toEqual({ messages: [], timedOut: true });

    // A wait longer than the client's request timeout survives on progress notifications.
    const progress: number[] = [];
    const long = (await bClient.callTool(
      { name: 'wait_for_message', arguments: { chatId: '5511000000003', timeoutSeconds: 7 } },
      undefined,
      {
        timeout: 6000,
        resetTimeoutOnProgress: true,
        onprogress: (p) => progress.push(p.progress),
      },
    )) as ToolResult;
    expect(long.structuredContent).toEqual({ messages: [], timedOut: true });
    expect(progress.length).toBeGreaterThan(0);

    const quiet = await call(bClient, 'wait_for_message', { chatId: '5511000000001', timeoutSeconds: 1 });
    expect(quiet.isError).toBeFalsy();
    expect(quiet.structuredContent).toEqual({ messages: [], timedOut: true });
  });

  it('admin key: admin tools, instance tools with instanceId', async () => {
    const admin = await connect(gw.adminKey);
    const { tools } = await admin.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_instances', 'create_instance', 'send_text']));
    expect(tools.find((t) => t.name === 'send_text')!.inputSchema.required).toContain('instanceId');

    const list = await call(admin, 'list_instances', { limit: 500 });
    expect(list.structuredContent.items.map((i: any) => i.instanceId)).toEqual(expect.arrayContaining([a.id, b.id]));

    const text = `admin says hi ${Date.now()}`;
    const sent = await call(admin, 'send_text', { instanceId: a.id, number: b.number, text });
    expect(sent.isError).toBeFalsy();
    await events.next(b.id, 'MESSAGE', (e) => e.data.message?.conversation === text);
    const missing = await call(admin, 'send_text', { number: b.number, text });
    expect(missing.isError).toBe(true);
    expect(missing.content[0].text).toContain('instanceId');

    const created = await call(admin, 'create_instance', { instanceName: `mcp-created-${Date.now()}`, network: 'sandbox' });
    expect(created.isError).toBeFalsy();
    const newId = created.structuredContent.instanceId;
    const connected = await call(admin, 'connect_instance', { instanceId: newId });
    expect(connected.isError).toBeFalsy();
    const qr = await waitFor(async () => {
      const answer = await call(admin, 'get_qr', { instanceId: newId });
      return answer.isError ? undefined : answer;
    });
    expect(qr.content.find((c) => c.type === 'image')).toMatchObject({ mimeType: 'image/png' });
    const status = await call(admin, 'get_instance_status', { instanceId: newId });
    expect(status.structuredContent.status).not.toBe('CONNECTED');

    const other = await call(admin, 'create_instance', { instanceName: `mcp-paired-${Date.now()}`, network: 'sandbox' });
    const paired = await call(admin, 'pair_with_code', { instanceId: other.structuredContent.instanceId, number: uniqueNumber() });
    expect(paired.isError).toBeFalsy();
    expect(paired.structuredContent.pairingCode).toMatch(/^[0-9]{8}$/);
    const unknown = await call(admin, 'get_instance_status', { instanceId: 'no-such-instance' });
    expect(unknown.isError).toBe(true);
    expect(unknown.structuredContent.status).toBe(404);
  });

  it('lists groups and reads one with its participants; sends to the group', async () => {
    const created = await gw.api('POST', '/api/v1/group/create', {
      key: a.token,
      body: { subject: 'MCP friends', participants: [b.number] },
    });
    expect(created.status).toBe(201);
    const groupId = created.body.group.groupId as string;
    const client = await connect(a.token);
    const groups = await call(client, 'list_groups');
    expect(groups.structuredContent.items.map((g: any) => g.groupId)).toContain(groupId);
    const group = await call(client, 'get_group', { groupId });
    expect(group.isError).toBeFalsy();
    expect(group.structuredContent.participants.map((p: any) => p.number)).toEqual(expect.arrayContaining([a.number, b.number]));
    expect(group.content[0].text).toContain('MCP friends');
    const text = `hi group ${Date.now()}`;
    await call(client, 'send_text', { number: groupId, text });
    await events.next(b.id, 'MESSAGE', (e) => e.data.key.remoteJid === groupId && e.data.message?.conversation === text);
  });

  it('an instance token reaches its own instance only', async () => {
    const client = await connect(a.token);
    const other = await call(client, 'send_text', { instanceId: b.id, number: a.number, text: 'not mine' });
    expect(other.isError).toBe(true);
    expect(other.content[0].text).toContain('instanceId');
    await expect(client.readResource({ uri: `waygate://instances/${b.id}/chats` })).rejects.toThrow(/own instance/);
    await expect(client.subscribeResource({ uri: `waygate://instances/${b.id}/chats` })).rejects.toThrow(/own instance/);
    // A message only B has is not found through A's key, whatever tool reaches for it.
    const stranger = uniqueNumber();
    const secret = await gw.api('POST', '/api/v1/sandbox/messages', {
      key: gw.adminKey,
      body: { from: stranger, to: b.number, text: 'for b only' },
    });
    expect(secret.status).toBe(200);
    await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === secret.body.key.id);
    const context = await call(client, 'get_message_context', { chatId: stranger, messageId: secret.body.key.id });
    expect(context).toMatchObject({ isError: true, structuredContent: { status: 404 } });
    const found = await call(client, 'find_messages', { text: 'for b only' });
    expect(found.structuredContent.items).toEqual([]);
    // Its own status is its own number.
    const status = await call(client, 'get_instance_status');
    expect(status.structuredContent).toMatchObject({ status: 'CONNECTED', number: a.number });
  });

  it('REST errors come back as tool results with isError, the message and the code', async () => {
    const client = await connect(a.token);
    const unknownChat = await call(client, 'get_chat', { chatId: '5511000000002' });
    expect(unknownChat.isError).toBe(true);
    expect(unknownChat.structuredContent).toMatchObject({ status: 404 });
    expect(unknownChat.content[0].text).toMatch(/not found/);
    const badArgs = await call(client, 'send_text', { number: 'abc', text: 'x' });
    expect(badArgs.isError).toBe(true);
    expect(badArgs.structuredContent).toMatchObject({ code: 'bad_request', status: 400 });
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  it('refuses a wrong or missing key with 401, never 500', async () => {
    const bad = await rawPost({ authorization: 'Bearer not-a-real-token-0123456789abcdef' }, listTools);
    expect(bad.status).toBe(401);
    expect(rpcOf(bad.text)).toMatchObject({ jsonrpc: '2.0', error: { message: 'invalid api key' } });
    expect(bad.headers['www-authenticate']).toMatch(/^Bearer/);
    const missing = await rawPost({}, listTools);
    expect(missing.status).toBe(401);
    const malformed = await rawPost({ apikey: 'x' }, listTools);
    expect(malformed.status).toBe(401);
    await expect(connect('wrong-key-wrong-key-wrong-key-00')).rejects.toThrow(/401|invalid api key/);
  });

  it('answers stateless requests (no session) and accepts the apikey header', async () => {
    const answer = await rawPost({ apikey: a.token }, listTools);
    expect(answer.status).toBe(200);
    expect(answer.headers['mcp-session-id']).toBeUndefined();
    expect(rpcOf(answer.text).result.tools.map((t: any) => t.name)).toContain('send_text');
  });

  it('binds a session to the key that opened it and closes it on DELETE', async () => {
    const client = await connect(a.token);
    const transport = client.transport as StreamableHTTPClientTransport;
    const sessionId = transport.sessionId!;
    expect(sessionId).toBeTruthy();
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    const own = await rawPost({ apikey: a.token, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, ping);
    expect(own.status).toBe(200);
    const stranger = await rawPost({ apikey: b.token, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, ping);
    expect(stranger.status).toBe(404);
    expect(rpcOf(stranger.text).error.data.code).toBe('mcp_session_unknown');
    await transport.terminateSession();
    const closed = await rawPost({ apikey: a.token, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, ping);
    expect(closed.status).toBe(404);
    const stream = await fetch(`${gw.url}/mcp`, { headers: { apikey: a.token, accept: 'text/event-stream' } });
    expect(stream.status).toBe(405);
    expect(stream.headers.get('allow')).toBe('POST');
  });

  it('refuses a Host or Origin that is not allowed (DNS rebinding)', async () => {
    const evilHost = await rawPost({ apikey: a.token, host: 'evil.example:80' }, listTools);
    expect(evilHost.status).toBe(403);
    expect(rpcOf(evilHost.text).error.data.code).toBe('mcp_host_refused');
    const evilOrigin = await rawPost({ apikey: a.token, origin: 'http://evil.example' }, listTools);
    expect(evilOrigin.status).toBe(403);
    expect(rpcOf(evilOrigin.text).error.data.code).toBe('mcp_origin_refused');
    const local = await rawPost({ apikey: a.token, origin: 'http://localhost:5173', host: `localhost:${new URL(gw.url).port}` }, listTools);
    expect(local.status).toBe(200);
  });

  it('a session subscribed to a chat is told when a message arrives; resources and prompts read', async () => {
    const bClient = await connect(b.token);
    const chatUri = `waygate://instances/${b.id}/chats/${a.number}@s.whatsapp.net/messages`;
    const updates: string[] = [];
    bClient.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      updates.push(notification.params.uri);
    });
    await bClient.subscribeResource({ uri: chatUri });
    const contact = uniqueNumber();
    // A virtual contact's message is for another chat: no update for this subscription.
    await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from: contact, to: b.number, text: 'from a stranger' } });
    const aClient = await connect(a.token);
    const text = `ping ${Date.now()}`;
    await call(aClient, 'send_text', { number: b.number, text });
    await waitFor(() => (updates.includes(chatUri) ? true : undefined), 10_000, 'resource update');
    expect(updates.every((uri) => uri === chatUri)).toBe(true);

    const read = await bClient.readResource({ uri: chatUri });
    expect((read.contents[0] as { text: string }).text).toContain(text);
    const resources = await bClient.listResources();
    expect(resources.resources.map((r) => r.uri)).toContain(`waygate://instances/${b.id}/chats`);
    const templates = await bClient.listResourceTemplates();
    expect(templates.resourceTemplates.length).toBeGreaterThan(0);
    const prompts = await bClient.listPrompts();
    expect(prompts.prompts.map((p) => p.name)).toEqual(['summarize_chat', 'draft_reply']);
    const prompt = await bClient.getPrompt({ name: 'summarize_chat', arguments: { chatId: a.number! } });
    expect((prompt.messages[0]!.content as { text: string }).text).toContain(text);
    // Arguments a prompt cannot take: InvalidParams (-32602), not an internal error.
    await expect(bClient.getPrompt({ name: 'summarize_chat', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('chatId is required'),
    });
    await expect(bClient.getPrompt({ name: 'no_such_prompt', arguments: { chatId: a.number! } })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('unknown prompt no_such_prompt'),
    });

    await bClient.unsubscribeResource({ uri: chatUri });
    const count = updates.length;
    const after = `after unsubscribe ${Date.now()}`;
    await call(aClient, 'send_text', { number: b.number, text: after });
    await events.next(b.id, 'MESSAGE', (e) => e.data.message?.conversation === after);
    await gw.bus.settled();
    expect(updates.length).toBe(count);
  });
});

describe('MCP with a failover-group token', () => {
  it('sends through the member that serves the group, and gets only the send tools its token may use', async () => {
    const first = await connectedInstance(gw, uniqueNumber());
    const second = await connectedInstance(gw, uniqueNumber());
    const created = await gw.api('POST', '/api/v1/admin/failover-groups', {
      key: gw.adminKey,
      body: { name: `mcp-group-${Date.now()}`, members: [first.id, second.id], policy: 'priority', minHealth: 0 },
    });
    expect(created.status).toBe(201);
    const group = await connect(created.body.token as string);

    const { tools } = await group.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['send_contact', 'send_location', 'send_media', 'send_poll', 'send_text']);

    const text = `through the group ${Date.now()}`;
    const sent = await call(group, 'send_text', { number: b.number, text });
    expect(sent.isError).toBeFalsy();
    expect(sent.structuredContent).toMatchObject({ instanceId: first.id, status: 'SENT' });
    const received = await events.next(b.id, 'MESSAGE', (e) => e.data.message?.conversation === text);
    expect(received.data.key.remoteJid).toBe(`${first.number}@s.whatsapp.net`);

    // The serving member drops: the same MCP session now sends from the next one.
    expect((await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: first.id } })).status).toBe(200);
    const later = `after the drop ${Date.now()}`;
    const moved = await call(group, 'send_text', { number: b.number, text: later });
    expect(moved.structuredContent).toMatchObject({ instanceId: second.id });
    const movedIn = await events.next(b.id, 'MESSAGE', (e) => e.data.message?.conversation === later);
    expect(movedIn.data.key.remoteJid).toBe(`${second.number}@s.whatsapp.net`);

    // What the token may not do: the REST refusal, as a tool result; no member's chats or resources.
    const chats = await call(group, 'list_chats');
    expect(chats).toMatchObject({ isError: true, structuredContent: { code: 'group_token_send_only', status: 403 } });
    await expect(group.readResource({ uri: `waygate://instances/${second.id}/chats` })).rejects.toThrow(/own instance/);
    await expect(group.subscribeResource({ uri: `waygate://instances/${second.id}/chats` })).rejects.toThrow(/own instance/);
    await expect(group.callTool({ name: 'list_instances', arguments: {} })).rejects.toThrow(/Unknown tool/);

    const unknown = await rawPost({ authorization: `Bearer wgg_${'A'.repeat(43)}` }, listTools);
    expect(unknown.status).toBe(401);
  });
});

describe('MCP with web users (access tokens) by role', () => {
  const password = 'correct horse battery';
  let owner: { accessToken: string };
  let operator: { accessToken: string; user: { email: string } };
  let viewer: { accessToken: string };
  const WRITE_TOOLS = ['send_text', 'send_media', 'react', 'mark_read', 'connect_instance', 'pair_with_code', 'create_instance'];

  async function invited(role: string): Promise<{ accessToken: string; user: { email: string } }> {
    const invitation = await gw.api('POST', '/api/v1/auth/invitations', {
      headers: { authorization: `Bearer ${owner.accessToken}` },
      body: { role },
    });
    expect(invitation.status).toBe(201);
    const registered = await gw.api('POST', '/api/v1/auth/register', {
      body: { email: `${role}-${Date.now()}@example.com`, password, invitation: invitation.body.code },
    });
    expect(registered.status).toBe(201);
    return registered.body;
  }

  beforeAll(async () => {
    const first = await gw.api('POST', '/api/v1/auth/register', { body: { email: 'owner-mcp@example.com', password } });
    expect(first.status).toBe(201);
    owner = first.body;
    operator = await invited('operator');
    viewer = await invited('viewer');
  });

  it('a viewer gets the read-only tools only; a write tool called anyway is refused with the REST read_only error', async () => {
    const client = await connect(viewer.accessToken);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_instances', 'list_chats', 'get_chat', 'find_messages', 'wait_for_message']));
    for (const name of [...WRITE_TOOLS, 'get_qr']) expect(names).not.toContain(name);
    for (const tool of tools) expect(tool.annotations?.readOnlyHint, tool.name).toBe(true);
    expect(tools.find((t) => t.name === 'list_chats')!.inputSchema.required).toContain('instanceId');

    const seen = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: 'for the viewer to read' } });
    expect(seen.status).toBe(200);
    const instances = await call(client, 'list_instances', { limit: 500 });
    expect(instances.structuredContent.items.map((i: any) => i.instanceId)).toContain(a.id);
    const chats = await call(client, 'list_chats', { instanceId: a.id });
    expect(chats.isError).toBeFalsy();
    expect(chats.structuredContent.items.map((c: any) => c.chatId)).toContain(`${b.number}@s.whatsapp.net`);

    const text = `a viewer tries ${Date.now()}`;
    const refused = await call(client, 'send_text', { instanceId: a.id, number: b.number, text });
    expect(refused).toMatchObject({ isError: true, structuredContent: { code: 'read_only', status: 403 } });
    expect(refused.content[0].text).toMatch(/may only read/);
    const create = await call(client, 'create_instance', { instanceName: `viewer-made-${Date.now()}`, network: 'sandbox' });
    expect(create).toMatchObject({ isError: true, structuredContent: { code: 'read_only' } });
    const qr = await call(client, 'get_qr', { instanceId: a.id });
    expect(qr).toMatchObject({ isError: true, structuredContent: { code: 'read_only' } });
    const stored = await call(client, 'find_messages', { instanceId: a.id, text: 'a viewer tries' });
    expect(stored.structuredContent.items).toEqual([]);
    const resource = await client.readResource({ uri: `waygate://instances/${a.id}/chats` });
    expect(resource.contents[0]!.mimeType).toBe('application/json');
  });

  it('an operator and an owner get every tool and act on any instance with instanceId', async () => {
    for (const [role, user] of [
      ['operator', operator],
      ['owner', owner],
    ] as const) {
      const client = await connect(user.accessToken);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names, role).toEqual(expect.arrayContaining([...WRITE_TOOLS, 'get_qr', 'list_instances']));
      const text = `${role} says hi ${Date.now()}`;
      const sent = await call(client, 'send_text', { instanceId: a.id, number: b.number, text });
      expect(sent.isError, role).toBeFalsy();
      const received = await events.next(b.id, 'MESSAGE', (e) => e.data.message?.conversation === text);
      expect(received.data.key.remoteJid).toBe(`${a.number}@s.whatsapp.net`);
      const created = await call(client, 'create_instance', { instanceName: `${role}-made-${Date.now()}`, network: 'sandbox' });
      expect(created.isError, role).toBeFalsy();
      expect(created.structuredContent.token).toMatch(/^wgt_/);
    }
  });

  it("binds a session to the user, not to the access token: the user's next token reaches it, another user's does not", async () => {
    const client = await connect(operator.accessToken);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const again = await gw.api('POST', '/api/v1/auth/login', { body: { email: operator.user.email, password } });
    expect(again.status).toBe(200);
    expect(again.body.accessToken).not.toBe(operator.accessToken);
    const ping = { jsonrpc: '2.0', id: 3, method: 'ping' };
    const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
    const fresh = await rawPost({ authorization: `Bearer ${again.body.accessToken}`, ...headers }, ping);
    expect(fresh.status).toBe(200);
    const stranger = await rawPost({ authorization: `Bearer ${owner.accessToken}`, ...headers }, ping);
    expect(stranger.status).toBe(404);
  });

  it('refuses an access token that is forged, or one with no user behind it, with 401', async () => {
    const [header, payload] = owner.accessToken.split('.');
    const forged = await rawPost({ authorization: `Bearer ${header}.${payload}.${'A'.repeat(43)}` }, listTools);
    expect(forged.status).toBe(401);
    expect(rpcOf(forged.text).error.data.code).toBe('invalid_session');
    // An access token in `apikey` is not looked at (users send it as Authorization: Bearer).
    const inApikey = await rawPost({ apikey: owner.accessToken }, listTools);
    expect(inApikey.status).toBe(401);
  });
});

describe('MCP Host/Origin settings', () => {
  const mcp = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/waygate-mcp-config', ...env }).mcp;

  it('defaults to loopback names plus a named HOST; a wildcard bind adds none', () => {
    expect(mcp({}).allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(mcp({ HOST: '192.168.1.20' }).allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]', '192.168.1.20']);
    expect(mcp({ HOST: '::1' }).allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(mcp({ MCP_ALLOWED_HOSTS: 'Waygate.Example.com, 10.0.0.5' }).allowedHosts).toEqual(['waygate.example.com', '10.0.0.5']);
    expect(mcp({ MCP_ALLOWED_HOSTS: '*' }).allowedHosts).toBe('*');
    expect(() => mcp({ MCP_ALLOWED_ORIGINS: 'evil.example' })).toThrow(/MCP_ALLOWED_ORIGINS/);
  });

  it('checks the Host name without its port, and Origin against the hosts or the origin list', () => {
    const config = mcp({});
    expect(() => checkHostAndOrigin(config, 'localhost:8080', undefined)).not.toThrow();
    expect(() => checkHostAndOrigin(config, '[::1]:8080', 'http://[::1]:3000')).not.toThrow();
    expect(() => checkHostAndOrigin(config, 'evil.example', undefined)).toThrow(/not allowed/);
    expect(() => checkHostAndOrigin(config, undefined, undefined)).toThrow(/not allowed/);
    expect(() => checkHostAndOrigin(config, 'localhost', 'null')).toThrow(/origin/);
    expect(() => checkHostAndOrigin(config, 'localhost', 'file://x')).toThrow(/origin/);
    const listed = mcp({ MCP_ALLOWED_HOSTS: '*', MCP_ALLOWED_ORIGINS: 'https://app.example.com' });
    expect(() => checkHostAndOrigin(listed, 'anything.example', 'https://app.example.com/')).not.toThrow();
    expect(() => checkHostAndOrigin(listed, 'anything.example', 'https://other.example.com')).toThrow(/origin/);
  });
});

describe('MCP callers', () => {
  const groupMember = { id: 'inst-of-group' } as Instance;
  const instances = { authenticate: () => Promise.reject(errors.invalidApiKey()) } as unknown as InstanceService;
  const request = {} as FastifyRequest;

  it('asks the credential resolvers (failover-group tokens) before the instance tokens, like the REST hook', async () => {
    const resolvers = emptyResolvers();
    resolvers.instance.push((key) => Promise.resolve(key === 'group-token-0123456789abcdef' ? groupMember : undefined));
    const options = { adminKey: 'admin-key-0123456789', resolvers, instances, keys: new AdminActingKeys() };
    await expect(mcpCallerOf('group-token-0123456789abcdef', request, options)).resolves.toMatchObject({
      kind: 'instance',
      instance: groupMember,
    });
    await expect(mcpCallerOf('admin-key-0123456789', request, options)).resolves.toMatchObject({ kind: 'admin' });
    await expect(mcpCallerOf('another-token-0123456789abcdef', request, options)).rejects.toMatchObject({ status: 401 });
    await expect(mcpCallerOf(undefined, request, options)).rejects.toMatchObject({ status: 401 });
  });

  it('a token a resolver knows but refuses on /mcp itself (403) is routed, asked route by route; an access token goes to the user resolvers', async () => {
    const resolvers = emptyResolvers();
    resolvers.instance.push((key, asked) => {
      if (key !== 'wgg_group-token-0123456789') return Promise.resolve(undefined);
      if (asked.routeOptions.url === '/api/v1/send/text') return Promise.resolve(groupMember);
      return Promise.reject(errors.groupTokenSendOnly());
    });
    resolvers.admin.push((asked) =>
      Promise.resolve(asked.headers.authorization === 'Bearer a.b.c' ? { id: 'user:7', readOnly: true } : undefined),
    );
    const options = { adminKey: 'admin-key-0123456789', resolvers, instances, keys: new AdminActingKeys() };
    const onMcp = {
      method: 'POST',
      routeOptions: { url: '/mcp', method: 'POST' },
      headers: { authorization: 'Bearer a.b.c' },
    } as unknown as FastifyRequest;
    const routed = await mcpCallerOf('wgg_group-token-0123456789', onMcp, options);
    if (routed.kind !== 'routed') throw new Error(`expected a routed caller, got ${routed.kind}`);
    await expect(routed.accepts('POST', '/send/text')).resolves.toBe(true);
    await expect(routed.accepts('GET', '/chat/list')).resolves.toBe(false);
    await expect(mcpCallerOf('a.b.c', onMcp, options)).resolves.toMatchObject({ kind: 'admin', user: { id: 'user:7', readOnly: true } });
    await expect(mcpCallerOf('x.y.z', { ...onMcp, headers: {} }, options)).rejects.toMatchObject({ status: 401 });
  });

  it('refuses the acting keys an admin uses in process when they come from outside', async () => {
    const keys = new AdminActingKeys();
    const resolvers = emptyResolvers();
    resolvers.instance.push((key) => Promise.resolve(keys.instanceIdOf(key) ? groupMember : undefined));
    const acting = keys.keyFor('some-instance');
    expect(keys.instanceIdOf(acting)).toBe('some-instance');
    expect(new AdminActingKeys().instanceIdOf(acting)).toBeUndefined();
    await expect(mcpCallerOf(acting, request, { adminKey: 'admin-key-0123456789', resolvers, instances, keys })).rejects.toMatchObject({
      status: 401,
    });
  });
});
