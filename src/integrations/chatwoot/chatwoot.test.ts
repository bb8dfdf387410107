/**
 * The Chatwoot integration end to end: a real gateway with sandbox instances, and the Chatwoot
 * contract server (test/support/chatwoot.ts, built from Chatwoot's swagger) as Chatwoot.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatwoot, type ChatwootContract } from '../../../test/support/chatwoot.js';
import {
  connectedInstance,
  DIALECTS,
  recordEvents,
  startGateway,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';
import { makeSamples, type Samples } from '../../../test/support/media.js';

describe.each(DIALECTS)('Chatwoot integration on %s', (dialect) => {
  let cw: ChatwootContract;
  let gw: TestGateway;
  let events: RecordedEvents;
  let samples: Samples;
  /** The instance linked to Chatwoot. */
  let support: TestInstance;
  /** A customer: another sandbox instance, so what the agent sends really arrives somewhere. */
  let customer: TestInstance;
  let webhookPath: string;

  const customerPhone = () => `+${customer.number}`;

  async function customerSays(text: string): Promise<string> {
    const sent = await gw.api('POST', '/api/v1/send/text', { key: customer.token, body: { number: support.number, text } });
    expect(sent.status).toBe(200);
    return sent.body.key.id as string;
  }

  function contactOfCustomer() {
    return cw.contactByPhone(customerPhone());
  }

  async function conversationOfCustomer() {
    const contact = await waitFor(() => contactOfCustomer()[0], 10_000, 'contact in Chatwoot');
    return waitFor(() => cw.conversationsOf(contact.id)[0], 10_000, 'conversation in Chatwoot');
  }

  async function messageWithSource(waId: string) {
    return waitFor(() => cw.messages.find((m) => m.source_id === `WAID:${waId}`), 10_000, `Chatwoot message of ${waId}`);
  }

  beforeAll(async () => {
    samples = await makeSamples();
    cw = await startChatwoot();
    gw = await startGateway({
      dialect,
      env: {
        MEDIA_ALLOW_PRIVATE_URLS: 'true',
        MEDIA_ALLOW_HTTP_URLS: 'true',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        CHANNEL_RETRY_BASE_MS: '50',
        CHANNEL_RETRY_MAX_MS: '200',
      },
    });
    events = recordEvents(gw);
    support = await connectedInstance(gw, uniqueNumber());
    customer = await connectedInstance(gw, uniqueNumber());
    const set = await gw.api('POST', '/api/v1/chatwoot', {
      key: support.token,
      body: {
        baseUrl: cw.url,
        accountId: cw.accountId,
        apiAccessToken: cw.token,
        inboxName: 'WhatsApp support',
        waygateUrl: gw.url,
        signAgentMessages: true,
      },
    });
    expect(set.status).toBe(200);
    webhookPath = set.body.webhookPath;
  }, 60_000);

  afterAll(async () => {
    await cw?.settled();
    await gw?.stop();
    await cw?.stop();
  });

  describe('settings', () => {
    it('creates an API inbox whose webhook_url points back at the instance, and reuses it on a second POST', async () => {
      expect(cw.inboxes).toHaveLength(1);
      expect(cw.inboxes[0]!.channel_type).toBe('Channel::Api');
      expect(cw.inboxes[0]!.webhook_url).toBe(`${gw.url}${webhookPath}`);
      expect(webhookPath).toMatch(new RegExp(`^/api/v1/chatwoot/webhook/${support.id}/[A-Za-z0-9_-]{20,}$`));
      const again = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: cw.token, inboxName: 'WhatsApp support', waygateUrl: gw.url },
      });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ inboxCreated: false, inboxId: cw.inboxes[0]!.id, webhookPath });
      expect(cw.inboxes).toHaveLength(1);
    });

    it('GET masks the access token and the webhook secret', async () => {
      const read = await gw.api('GET', '/api/v1/chatwoot', { key: support.token });
      expect(read.status).toBe(200);
      expect(read.body.apiAccessToken).toBe('cw-t****');
      expect(JSON.stringify(read.body)).not.toContain(cw.token);
      expect(JSON.stringify(read.body)).not.toContain(webhookPath.split('/').pop());
      expect(read.body.webhookPath).toBe(`/api/v1/chatwoot/webhook/${support.id}/****`);
      expect(read.body).toMatchObject({
        baseUrl: cw.url,
        accountId: cw.accountId,
        inboxName: 'WhatsApp support',
        reopenConversation: true,
      });
    });

    it('refuses a token Chatwoot does not accept, and answers 404 for an instance without settings', async () => {
      const bad = await gw.api('POST', '/api/v1/chatwoot', {
        key: customer.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: 'wrong-token', inboxId: cw.inboxes[0]!.id },
      });
      expect(bad.status).toBe(422);
      expect(bad.body).toMatchObject({ error: 'Chatwoot refused the api access token for this account' });
      expect((await gw.api('GET', '/api/v1/chatwoot', { key: customer.token })).status).toBe(404);
    });
  });

  describe('WhatsApp -> Chatwoot', () => {
    it('brings an incoming message once: one contact by phone, one conversation, one message; a second message reuses the conversation', async () => {
      const first = await customerSays('hello, I need help');
      const conversation = await conversationOfCustomer();
      const posted = await messageWithSource(first);
      expect(posted).toMatchObject({ content: 'hello, I need help', message_type: 0, conversation_id: conversation.id });
      const second = await customerSays('are you there?');
      await messageWithSource(second);
      expect(contactOfCustomer()).toHaveLength(1);
      expect(contactOfCustomer()[0]!.contact_inboxes).toHaveLength(1);
      expect(cw.conversationsOf(contactOfCustomer()[0]!.id)).toHaveLength(1);
      expect(cw.messagesOf(conversation.id).map((m) => m.content)).toEqual(['hello, I need help', 'are you there?']);
      // Chatwoot echoed both (incoming) messages to the webhook: nothing went back to WhatsApp.
      await cw.settled();
      expect(events.of(support.id, 'SEND_MESSAGE')).toHaveLength(0);
    });

    it('never posts a message twice: not when its event is delivered again, not when Chatwoot failed after storing it', async () => {
      const id = await customerSays('only once please');
      const stored = await events.next(support.id, 'MESSAGE', (e) => e.data.key.id === id);
      await messageWithSource(id);
      // The same WhatsApp message as a new event (a redelivery from the network or a replay).
      await gw.bus.publish(support.id, { type: 'MESSAGE', data: stored.data });
      // Chatwoot stores the next message but answers 503: the retry finds it by its source_id.
      cw.failAfterCreate = 1;
      const flaky = await customerSays('stored, then 503');
      await waitFor(() => (cw.failAfterCreate === 0 ? true : undefined), 10_000, 'the failing answer');
      const marker = await customerSays('after the retry');
      await messageWithSource(marker);
      await gw.dispatcher.whenIdle();
      expect(cw.messages.filter((m) => m.source_id === `WAID:${id}`)).toHaveLength(1);
      expect(cw.messages.filter((m) => m.source_id === `WAID:${flaky}`)).toHaveLength(1);
    });

    it('keeps events while Chatwoot is down and delivers them, in order, when it is back', async () => {
      cw.down = true;
      const before = cw.requests.length;
      const a = await customerSays('sent while down 1');
      const b = await customerSays('sent while down 2');
      // Retried while down, and the settings show the road is down.
      await waitFor(() => (cw.requests.length >= before + 3 ? true : undefined), 10_000, 'retries');
      const health = await gw.api('GET', '/api/v1/chatwoot', { key: support.token });
      expect(health.body.health.up).toBe(false);
      expect(health.body.health.lastError).toContain('503');
      cw.down = false;
      const first = await messageWithSource(a);
      const second = await messageWithSource(b);
      expect(second.id).toBeGreaterThan(first.id);
      await gw.dispatcher.whenIdle();
      expect(cw.messages.filter((m) => m.source_id === `WAID:${a}` || m.source_id === `WAID:${b}`)).toHaveLength(2);
      expect((await gw.api('GET', '/api/v1/chatwoot', { key: support.token })).body.health.up).toBe(true);
    });

    it('uploads media as an attachment, and posts messages sent through the API as outgoing', async () => {
      const media = await gw.api('POST', '/api/v1/send/media', {
        key: customer.token,
        body: { number: support.number, media: { base64: samples.png.toString('base64') }, caption: 'my receipt' },
      });
      expect(media.status).toBe(200);
      const posted = await messageWithSource(media.body.key.id);
      expect(posted.content).toBe('my receipt');
      expect(posted.attachments).toHaveLength(1);
      expect(posted.attachments[0]!.bytes.equals(samples.png)).toBe(true);
      const fromApi = await gw.api('POST', '/api/v1/send/text', {
        key: support.token,
        body: { number: customer.number, text: 'sent by our CRM' },
      });
      expect(fromApi.status).toBe(200);
      const outgoing = await messageWithSource(fromApi.body.key.id);
      expect(outgoing).toMatchObject({ content: 'sent by our CRM', message_type: 1 });
      // Chatwoot echoes the outgoing message to the webhook: it must not be sent to WhatsApp again.
      await cw.settled();
      await gw.dispatcher.whenIdle();
      expect(cw.webhooks.some((w) => w.body.source_id === `WAID:${fromApi.body.key.id}` && w.body.message_type === 'outgoing')).toBe(true);
      expect(events.of(customer.id, 'MESSAGE').filter((e) => JSON.stringify(e.data.message).includes('sent by our CRM'))).toHaveLength(1);
      // A Chatwoot whose webhooks leave out source_id: the echo is still recognised by its id.
      cw.echoSourceId = false;
      const noSource = await gw.api('POST', '/api/v1/send/text', {
        key: support.token,
        body: { number: customer.number, text: 'echo without source' },
      });
      await messageWithSource(noSource.body.key.id);
      await cw.settled();
      await gw.dispatcher.whenIdle();
      cw.echoSourceId = true;
      // Webhook work runs in the background: an agent message sent after the echo arrives after it was handled.
      await cw.agentReply(outgoing.conversation_id, { content: 'marker after the echo' });
      await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('marker after the echo'));
      expect(cw.webhooks.some((w) => w.body.content === 'echo without source' && w.body.source_id === null)).toBe(true);
      expect(events.of(customer.id, 'MESSAGE').filter((e) => JSON.stringify(e.data.message).includes('echo without source'))).toHaveLength(
        1,
      );
    });

    it('brings a group as one conversation named by its subject, each message headed by its sender, and skips groups when ignoreGroups is set', async () => {
      const created = await gw.api('POST', '/api/v1/group/create', {
        key: support.token,
        body: { subject: 'VIP buyers', participants: [customer.number] },
      });
      expect(created.status).toBe(201);
      const groupJid = created.body.group.groupId as string;
      const first = await gw.api('POST', '/api/v1/send/text', { key: customer.token, body: { number: groupJid, text: 'hello group' } });
      expect(first.status).toBe(200);
      const posted = await messageWithSource(first.body.key.id);
      expect(posted.content).toMatch(new RegExp(`^\\*\\*.+\\*\\*.*:\\nhello group$`));
      expect(posted.content).toContain(customer.number);
      const second = await gw.api('POST', '/api/v1/send/text', {
        key: customer.token,
        body: { number: groupJid, text: 'second in group' },
      });
      expect((await messageWithSource(second.body.key.id)).conversation_id).toBe(posted.conversation_id);
      const groupContacts = cw.contacts.filter((c) => c.identifier === groupJid);
      expect(groupContacts).toHaveLength(1);
      expect(groupContacts[0]).toMatchObject({ name: 'VIP buyers', phone_number: null });

      const set = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: {
          baseUrl: cw.url,
          accountId: cw.accountId,
          apiAccessToken: cw.token,
          inboxName: 'WhatsApp support',
          waygateUrl: gw.url,
          ignoreGroups: true,
        },
      });
      expect(set.status).toBe(200);
      const ignored = await gw.api('POST', '/api/v1/send/text', { key: customer.token, body: { number: groupJid, text: 'ignored' } });
      await events.next(support.id, 'MESSAGE', (e) => e.data.key.id === ignored.body.key.id);
      const marker = await customerSays('after the ignored group message');
      await messageWithSource(marker);
      await gw.dispatcher.whenIdle();
      expect(cw.messages.find((m) => m.source_id === `WAID:${ignored.body.key.id as string}`)).toBeUndefined();
      await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: cw.token, inboxName: 'WhatsApp support', waygateUrl: gw.url },
      });
    });

    it('never makes a phone number of an @lid address: the contact is keyed by the chat id, without a phone', async () => {
      const lid = '190000000000123@lid';
      await gw.bus.publish(support.id, {
        type: 'MESSAGE',
        data: {
          key: { remoteJid: lid, fromMe: false, id: 'LIDMSG000001' },
          pushName: 'Hidden Number',
          message: { conversation: 'from a lid' },
          messageTimestamp: 1,
        },
      });
      await messageWithSource('LIDMSG000001');
      const contacts = cw.contacts.filter((c) => c.identifier === lid);
      expect(contacts).toHaveLength(1);
      expect(contacts[0]).toMatchObject({ name: 'Hidden Number', phone_number: null });
      expect(cw.contacts.some((c) => c.phone_number === '+190000000000123')).toBe(false);
    });

    it('reopens a resolved conversation when the customer writes again', async () => {
      const conversation = await conversationOfCustomer();
      cw.resolve(conversation.id);
      const id = await customerSays('me again');
      const posted = await messageWithSource(id);
      expect(posted.conversation_id).toBe(conversation.id);
      expect(cw.conversations.find((c) => c.id === conversation.id)!.status).toBe('open');
      expect(cw.conversationsOf(contactOfCustomer()[0]!.id)).toHaveLength(1);
    });
  });

  describe('Chatwoot -> WhatsApp', () => {
    it('sends an agent reply to the customer, signed with the agent name, once, and never posts it back', async () => {
      const conversation = await conversationOfCustomer();
      const countBefore = cw.messagesOf(conversation.id).length;
      const { message, delivery } = await cw.agentReply(conversation.id, { content: 'Hi! How can we help?', agentName: 'Ana' });
      expect(delivery?.status).toBe(200);
      const received = await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('How can we help?'));
      expect(JSON.stringify(received.data.message)).toContain('*Ana:*\\nHi! How can we help?');
      // Chatwoot retries a webhook it thinks failed: the second call sends nothing.
      expect(await cw.postWebhook(`${gw.url}${webhookPath}`, cw.webhookBody('message_created', message, 'Ana'))).toBe(200);
      const sent = await events.next(support.id, 'SEND_MESSAGE', (e) => JSON.stringify(e.data.message).includes('How can we help?'));
      await gw.dispatcher.whenIdle();
      await cw.settled();
      expect(events.of(customer.id, 'MESSAGE').filter((e) => JSON.stringify(e.data.message).includes('How can we help?'))).toHaveLength(1);
      // The SEND_MESSAGE of the agent's reply is not posted to Chatwoot again.
      expect(cw.messages.find((m) => m.source_id === `WAID:${sent.data.key.id}`)).toBeUndefined();
      expect(cw.messagesOf(conversation.id)).toHaveLength(countBefore + 1);
    });

    it('keeps the quote of an agent reply (in_reply_to) on WhatsApp', async () => {
      const id = await customerSays('which plan do I have?');
      const question = await messageWithSource(id);
      await cw.agentReply(question.conversation_id, { content: 'the yearly one', inReplyTo: question.id });
      const received = await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('the yearly one'));
      expect(received.data.message.extendedTextMessage.contextInfo.stanzaId).toBe(id);
    });

    it("sends an agent attachment as media, fetched through Chatwoot's storage redirect", async () => {
      const conversation = await conversationOfCustomer();
      await cw.agentReply(conversation.id, {
        content: 'here is the invoice',
        attachments: [{ bytes: samples.png, mimetype: 'image/png', fileName: 'invoice.png' }],
      });
      const received = await events.next(customer.id, 'MESSAGE', (e) => e.data.message.imageMessage !== undefined);
      expect(received.data.message.imageMessage.caption).toContain('here is the invoice');
      expect(received.data.media).toMatchObject({ mimetype: 'image/png', fileLength: samples.png.length });
    });

    it('marks an agent message failed in Chatwoot, with the reason, when it cannot be sent', async () => {
      const conversation = await conversationOfCustomer();
      const { message } = await cw.agentReply(conversation.id, { content: 'draft', private: true });
      const body = {
        ...cw.webhookBody('message_created', message),
        private: false,
        content: 'see attached',
        attachments: [{ id: 1, file_type: 'image', data_url: 'http://127.0.0.1:1/unreachable.png' }],
      };
      expect(await cw.postWebhook(`${gw.url}${webhookPath}`, body)).toBe(200);
      await waitFor(() => (cw.messages.find((m) => m.id === message.id)?.status === 'failed' ? true : undefined), 15_000, 'failed status');
      expect(cw.messages.find((m) => m.id === message.id)!.external_error).toMatch(/^not sent to WhatsApp: /);
    });

    it('does not send private notes', async () => {
      const conversation = await conversationOfCustomer();
      const { delivery } = await cw.agentReply(conversation.id, { content: 'internal: VIP customer', private: true });
      expect(delivery?.status).toBe(200);
      expect(delivery?.body).toMatchObject({ private: true });
      const { delivery: after } = await cw.agentReply(conversation.id, { content: 'public marker' });
      expect(after?.status).toBe(200);
      await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('public marker'));
      expect(events.of(customer.id, 'MESSAGE').some((e) => JSON.stringify(e.data.message).includes('VIP customer'))).toBe(false);
    });

    it('refuses webhook calls without the secret (401), and with a wrong signature when the inbox signs', async () => {
      const conversation = await conversationOfCustomer();
      const { message } = await cw.agentReply(conversation.id, { content: 'probe', private: true });
      const body = { ...cw.webhookBody('message_created', message), private: false, content: 'forged' };
      const wrongSecret = webhookPath.replace(/[^/]+$/, 'not-the-secret');
      expect(await cw.postWebhook(`${gw.url}${wrongSecret}`, body)).toBe(401);
      const otherInstance = webhookPath.replace(support.id, customer.id);
      expect(await cw.postWebhook(`${gw.url}${otherInstance}`, body)).toBe(401);

      const signing = 'chatwoot-signing-secret';
      const set = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: {
          baseUrl: cw.url,
          accountId: cw.accountId,
          apiAccessToken: cw.token,
          inboxName: 'WhatsApp support',
          waygateUrl: gw.url,
          signingSecret: signing,
        },
      });
      expect(set.status).toBe(200);
      expect(set.body.signingSecret).toBe('chat****');
      const url = `${gw.url}${webhookPath}`;
      expect(await cw.postWebhook(url, body)).toBe(401);
      expect(await cw.postWebhook(url, body, { secret: 'another-secret' })).toBe(401);
      expect(await cw.postWebhook(url, body, { secret: signing, timestamp: Math.floor(Date.now() / 1000) - 3600 })).toBe(401);
      const signed = { ...body, id: message.id + 100_000, content: 'signed and fine' };
      expect(await cw.postWebhook(url, signed, { secret: signing })).toBe(200);
      await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('signed and fine'));
      expect(events.of(customer.id, 'MESSAGE').some((e) => JSON.stringify(e.data.message).includes('forged'))).toBe(false);
      // Chatwoot itself signing with the inbox secret: its webhook is accepted.
      cw.inboxes[0]!.secret = signing;
      const { delivery } = await cw.agentReply(conversation.id, { content: 'signed by Chatwoot' });
      expect(delivery?.status).toBe(200);
      await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('signed by Chatwoot'));
      cw.inboxes[0]!.secret = null;
      const unset = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: cw.token, inboxName: 'WhatsApp support', waygateUrl: gw.url },
      });
      expect(unset.body.signingSecret).toBeNull();
    });

    it('keeps quotes (in_reply_to), follows edits and deletions from WhatsApp', async () => {
      const original = await customerSays('my order is 1234');
      const posted = await messageWithSource(original);
      const reply = await gw.api('POST', '/api/v1/send/text', {
        key: customer.token,
        body: { number: support.number, text: 'sorry, 1235', quoted: { id: original } },
      });
      expect(reply.status).toBe(200);
      const quoted = await messageWithSource(reply.body.key.id);
      expect(quoted.content_attributes).toMatchObject({ in_reply_to: posted.id });

      const edit = await gw.api('POST', '/api/v1/message/edit', {
        key: customer.token,
        body: { chatId: support.number!, messageId: original, text: 'my order is 4321' },
      });
      expect(edit.status).toBe(200);
      const edited = await waitFor(() => cw.messages.find((m) => m.content === '✏️ my order is 4321'), 10_000, 'the edit in Chatwoot');
      expect(edited.content_attributes).toMatchObject({ in_reply_to: posted.id });

      const removed = await gw.api('POST', '/api/v1/message/delete', {
        key: customer.token,
        body: { chatId: support.number!, messageId: reply.body.key.id },
      });
      expect(removed.status).toBe(200);
      await waitFor(() => (cw.messages.find((m) => m.id === quoted.id)?.deleted ? true : undefined), 10_000, 'the deletion in Chatwoot');
    });

    it('marks the agent message read in Chatwoot when the customer reads it, and deletes it on WhatsApp when the agent deletes it', async () => {
      const conversation = await conversationOfCustomer();
      const { message } = await cw.agentReply(conversation.id, { content: 'please confirm', agentName: 'Ana' });
      const received = await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('please confirm'));
      const read = await gw.api('POST', '/api/v1/message/read', {
        key: customer.token,
        body: { chatId: support.number!, messageIds: [received.data.key.id] },
      });
      expect(read.status).toBe(200);
      await waitFor(
        () => (cw.messages.find((m) => m.id === message.id)?.status === 'read' ? true : undefined),
        10_000,
        'status read in Chatwoot',
      );

      await cw.agentDelete(message.id);
      const revoked = await events.next(
        customer.id,
        'MESSAGE',
        (e) => e.data.message.protocolMessage?.type === 'REVOKE' && e.data.message.protocolMessage.key.id === received.data.key.id,
      );
      expect(revoked).toBeDefined();
    });

    it('shows the agent typing on WhatsApp and sends the closing message when the conversation is resolved', async () => {
      const conversation = await conversationOfCustomer();
      expect((await cw.agentTyping(conversation.id, true))?.status).toBe(200);
      await events.next(customer.id, 'CHAT_PRESENCE', (e) => e.data.presence === 'composing');
      const set = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: {
          baseUrl: cw.url,
          accountId: cw.accountId,
          apiAccessToken: cw.token,
          inboxName: 'WhatsApp support',
          waygateUrl: gw.url,
          closingMessage: 'Thanks for talking to us!',
        },
      });
      expect(set.status).toBe(200);
      const countBefore = cw.messagesOf(conversation.id).length;
      expect((await cw.agentResolve(conversation.id))?.status).toBe(200);
      const closing = await events.next(customer.id, 'MESSAGE', (e) =>
        JSON.stringify(e.data.message).includes('Thanks for talking to us!'),
      );
      expect(closing).toBeDefined();
      await gw.dispatcher.whenIdle();
      // The closing message is not posted back, and the resolved conversation stays resolved.
      expect(cw.messagesOf(conversation.id)).toHaveLength(countBefore);
      expect(cw.conversations.find((c) => c.id === conversation.id)!.status).toBe('resolved');
    });

    it('imports contacts and recent history through the API, paced, without doubling what is already there', async () => {
      const shop = await connectedInstance(gw, uniqueNumber());
      const buyer = await connectedInstance(gw, uniqueNumber());
      const ids: string[] = [];
      for (const text of ['old 1', 'old 2', 'old 3']) {
        const sent = await gw.api('POST', '/api/v1/send/text', { key: buyer.token, body: { number: shop.number, text } });
        ids.push(sent.body.key.id);
      }
      await events.next(shop.id, 'MESSAGE', (e) => e.data.key.id === ids[2]);
      const set = await gw.api('POST', '/api/v1/chatwoot', {
        key: shop.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: cw.token, inboxName: 'Shop', waygateUrl: gw.url },
      });
      expect(set.status).toBe(200);
      const started = await gw.api('POST', '/api/v1/chatwoot/import', { key: shop.token, body: { days: 1, intervalMs: 5 } });
      expect(started.status).toBe(202);
      expect(started.body.state).toBe('running');
      const done = await waitFor(
        async () => {
          const status = await gw.api('GET', '/api/v1/chatwoot/import', { key: shop.token });
          return status.body.state === 'running' ? undefined : status.body;
        },
        20_000,
        'the import',
      );
      expect(done).toMatchObject({ state: 'done', total: 3, messages: 3, lastError: null });
      expect(done.contacts).toBeGreaterThanOrEqual(1);
      const posted = await Promise.all(ids.map((id) => messageWithSource(id)));
      expect(posted.map((m) => m.content?.split('\n').pop())).toEqual(['old 1', 'old 2', 'old 3']);
      expect(posted[0]!.content).toMatch(/^🕓 \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\n/);
      expect(cw.contactByPhone(`+${buyer.number}`)).toHaveLength(1);

      const again = await gw.api('POST', '/api/v1/chatwoot/import', { key: shop.token, body: { days: 1, intervalMs: 0 } });
      expect(again.status).toBe(202);
      const second = await waitFor(
        async () => {
          const status = await gw.api('GET', '/api/v1/chatwoot/import', { key: shop.token });
          return status.body.state === 'running' ? undefined : status.body;
        },
        20_000,
        'the second import',
      );
      expect(second).toMatchObject({ state: 'done', messages: 0 });
      for (const id of ids) expect(cw.messages.filter((m) => m.source_id === `WAID:${id}`)).toHaveLength(1);
      expect(cw.contactByPhone(`+${buyer.number}`)).toHaveLength(1);
    });

    it('finds or creates the contact again when it was deleted in Chatwoot', async () => {
      const old = contactOfCustomer()[0]!;
      cw.deleteContact(old.id);
      const id = await customerSays('anyone there? new contact');
      const posted = await messageWithSource(id);
      const fresh = contactOfCustomer();
      expect(fresh).toHaveLength(1);
      expect(fresh[0]!.id).not.toBe(old.id);
      expect(cw.conversations.find((c) => c.id === posted.conversation_id)!.contact_id).toBe(fresh[0]!.id);
    });

    it('DELETE removes the settings: no more events to Chatwoot, the webhook URL stops working', async () => {
      const removed = await gw.api('DELETE', '/api/v1/chatwoot', { key: support.token });
      expect(removed.status).toBe(200);
      expect(await cw.postWebhook(`${gw.url}${webhookPath}`, { event: 'message_created' })).toBe(401);
      const id = await customerSays('after disconnect');
      await events.next(support.id, 'MESSAGE', (e) => e.data.key.id === id);
      await gw.dispatcher.whenIdle();
      expect(cw.messages.find((m) => m.source_id === `WAID:${id}`)).toBeUndefined();
      expect((await gw.api('GET', '/api/v1/chatwoot', { key: support.token })).status).toBe(404);

      // Set up again: a new webhook secret, and the existing inbox is pointed at it (no second inbox).
      const again = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: cw.token, inboxName: 'WhatsApp support', waygateUrl: gw.url },
      });
      expect(again.status).toBe(200);
      expect(again.body.webhookPath).not.toBe(webhookPath);
      expect(cw.inboxes.filter((i) => i.name === 'WhatsApp support')).toHaveLength(1);
      expect(cw.inboxes.find((i) => i.name === 'WhatsApp support')!.webhook_url).toBe(`${gw.url}${again.body.webhookPath as string}`);
      const back = await customerSays('connected again');
      const posted = await messageWithSource(back);
      // The mappings were forgotten: the contact is found again by its phone number, not created twice.
      expect(contactOfCustomer()).toHaveLength(1);
      expect(contactOfCustomer()[0]!.contact_inboxes).toHaveLength(1);
      await cw.agentReply(posted.conversation_id, { content: 'welcome back' });
      await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('welcome back'));
    });
  });
});

describe('Chatwoot integration across a restart', () => {
  it('delivers the events that waited for Chatwoot after the gateway restarts, once each, in order; the webhook keeps working', async () => {
    const cw = await startChatwoot();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chatwoot-'));
    const env = {
      MEDIA_ALLOW_PRIVATE_URLS: 'true',
      MEDIA_ALLOW_HTTP_URLS: 'true',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      CHANNEL_RETRY_BASE_MS: '50',
      CHANNEL_RETRY_MAX_MS: '200',
    };
    let gw = await startGateway({ dataDir, env });
    try {
      const support = await connectedInstance(gw, uniqueNumber());
      const customer = await connectedInstance(gw, uniqueNumber());
      const set = await gw.api('POST', '/api/v1/chatwoot', {
        key: support.token,
        body: { baseUrl: cw.url, accountId: cw.accountId, apiAccessToken: cw.token, inboxName: 'Restart', waygateUrl: gw.url },
      });
      expect(set.status).toBe(200);
      const first = await gw.api('POST', '/api/v1/send/text', {
        key: customer.token,
        body: { number: support.number, text: 'before the outage' },
      });
      await waitFor(() => cw.messages.find((m) => m.source_id === `WAID:${first.body.key.id}`), 10_000, 'first message');
      cw.down = true;
      const ids: string[] = [];
      for (const text of ['waiting 1', 'waiting 2', 'waiting 3']) {
        ids.push((await gw.api('POST', '/api/v1/send/text', { key: customer.token, body: { number: support.number, text } })).body.key.id);
      }
      const before = cw.requests.length;
      await waitFor(() => (cw.requests.length >= before + 2 ? true : undefined), 10_000, 'retries while down');
      await gw.stop();
      cw.down = false;
      gw = await startGateway({ dataDir, env });
      const posted = await Promise.all(
        ids.map((id) => waitFor(() => cw.messages.find((m) => m.source_id === `WAID:${id}`), 10_000, `message ${id}`)),
      );
      expect(posted.map((m) => m.content)).toEqual(['waiting 1', 'waiting 2', 'waiting 3']);
      expect(posted[1]!.id).toBeGreaterThan(posted[0]!.id);
      expect(posted[2]!.id).toBeGreaterThan(posted[1]!.id);
      await gw.dispatcher.whenIdle();
      for (const id of [first.body.key.id as string, ...ids])
        expect(cw.messages.filter((m) => m.source_id === `WAID:${id}`)).toHaveLength(1);
      expect(cw.conversations).toHaveLength(1);

      // The webhook URL (and its secret) survived the restart; only the test's port changed.
      cw.inboxes[0]!.webhook_url = `${gw.url}${set.body.webhookPath as string}`;
      const events = recordEvents(gw);
      const { delivery } = await cw.agentReply(cw.conversations[0]!.id, { content: 'back online', agentName: 'Bo' });
      expect(delivery?.status).toBe(200);
      await events.next(customer.id, 'MESSAGE', (e) => JSON.stringify(e.data.message).includes('back online'));
    } finally {
      await cw.settled();
      await gw.stop();
      await cw.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
