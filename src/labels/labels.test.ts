import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { contactSays, expectError, expectStatus, sandboxAccount, instanceCalls } from '../../test/support/social.js';

describe('/label on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  const { get, post } = instanceCalls(() => gw);

  async function businessInstance(): Promise<TestInstance> {
    const instance = await connectedInstance(gw, uniqueNumber());
    expect((await sandboxAccount(gw, { number: instance.number, business: true })).isBusiness).toBe(true);
    return instance;
  }

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
  });
  afterAll(async () => gw.stop());

  it('refuses personal accounts on every label route', async () => {
    const personal = await connectedInstance(gw, uniqueNumber());
    expectError(await get(personal, '/label/list'), 403, /only available to WhatsApp Business accounts/);
    expectError(await post(personal, '/label/create', { name: 'VIP', color: 1 }), 403, /Business/);
    expectError(await post(personal, '/label/apply', { labelId: '1', chatId: uniqueNumber() }), 403, /Business/);
    // Turning business off again takes the labels away.
    const shop = await businessInstance();
    expectStatus(await post(shop, '/label/create', { name: 'Lead' }), 201);
    await sandboxAccount(gw, { number: shop.number, business: false });
    expectError(await get(shop, '/label/list'), 403, /Business/);
  });

  it('creates, edits, lists and deletes labels, with LABEL events', async () => {
    const shop = await businessInstance();
    const vip = expectStatus(await post(shop, '/label/create', { name: 'VIP', color: 3 }), 201);
    expect(vip).toEqual({ labelId: expect.any(String), name: 'VIP', color: 3 });
    expect((await events.next(shop.id, 'LABEL', (e) => e.data.action === 'create')).data).toEqual({ action: 'create', label: vip });
    const paid = expectStatus(await post(shop, '/label/create', { name: 'Paid' }), 201);
    expect(paid.color).toBe(0);
    expectError(await post(shop, '/label/create', { name: 'vip', color: 1 }), 409, /already exists/);
    expectError(await post(shop, '/label/create', { name: 'Bad', color: 20 }), 400, /color/);

    const edited = expectStatus(await post(shop, '/label/edit', { labelId: vip.labelId, name: 'Very important', color: 5 }), 200);
    expect(edited).toEqual({ labelId: vip.labelId, name: 'Very important', color: 5 });
    await events.next(shop.id, 'LABEL', (e) => e.data.action === 'edit' && e.data.label.name === 'Very important');
    expectError(await post(shop, '/label/edit', { labelId: vip.labelId, name: 'Paid' }), 409, /already exists/);
    expectError(await post(shop, '/label/edit', { labelId: '999', color: 1 }), 404, /label 999 not found/);
    expectError(await post(shop, '/label/edit', { labelId: vip.labelId }), 400, /fewer than 2|must NOT have fewer/);

    expect(expectStatus(await get(shop, '/label/list'), 200)).toMatchObject({ items: [edited, paid], total: 2 });
    expect(expectStatus(await post(shop, '/label/delete', { labelId: paid.labelId }), 200)).toEqual({
      labelId: paid.labelId,
      deleted: true,
    });
    await events.next(shop.id, 'LABEL', (e) => e.data.action === 'delete' && e.data.label.labelId === paid.labelId);
    expect(expectStatus(await get(shop, '/label/list'), 200).total).toBe(1);
    expectError(await post(shop, '/label/delete', { labelId: paid.labelId }), 404, /not found/);
  });

  it('keeps at most 20 labels per account', async () => {
    const shop = await businessInstance();
    for (let i = 0; i < 20; i += 1) expectStatus(await post(shop, '/label/create', { name: `L${i}` }), 201);
    expectError(await post(shop, '/label/create', { name: 'one too many' }), 409, /at most 20 labels/);
  });

  it('applies labels to chats and messages and takes them off; chats filter by label', async () => {
    const shop = await businessInstance();
    const customer = uniqueNumber();
    const first = await contactSays(gw, customer, shop.number!, 'I want a bike');
    await contactSays(gw, uniqueNumber(), shop.number!, 'unrelated');
    const lead = expectStatus(await post(shop, '/label/create', { name: 'Lead', color: 2 }), 201);

    const onChat = expectStatus(await post(shop, '/label/apply', { labelId: lead.labelId, chatId: customer }), 200);
    expect(onChat).toEqual({ labelId: lead.labelId, chatId: `${customer}@s.whatsapp.net`, labels: [lead.labelId] });
    expect((await events.next(shop.id, 'LABEL', (e) => e.data.action === 'apply' && !e.data.messageId)).data).toEqual({
      action: 'apply',
      label: lead,
      chatId: `${customer}@s.whatsapp.net`,
    });
    const filtered = expectStatus(await get(shop, `/chat/list?labelId=${lead.labelId}`), 200);
    expect(filtered.items.map((c: any) => [c.chatId, c.labels])).toEqual([[`${customer}@s.whatsapp.net`, [lead.labelId]]]);

    const onMessage = expectStatus(
      await post(shop, '/label/apply', { labelId: lead.labelId, chatId: customer, messageId: first.key.id }),
      200,
    );
    expect(onMessage).toEqual({
      labelId: lead.labelId,
      chatId: `${customer}@s.whatsapp.net`,
      messageId: first.key.id,
      labels: [lead.labelId],
    });
    await events.next(shop.id, 'LABEL', (e) => e.data.action === 'apply' && e.data.messageId === first.key.id);
    const history = expectStatus(await get(shop, `/chat/history?chatId=${customer}`), 200);
    expect(history.items[0]).toMatchObject({ key: { id: first.key.id }, labels: [lead.labelId] });
    expectError(
      await post(shop, '/label/apply', { labelId: lead.labelId, chatId: customer, messageId: 'NOPE' }),
      404,
      /message NOPE not found/,
    );
    expectError(await post(shop, '/label/apply', { labelId: lead.labelId, chatId: uniqueNumber() }), 404, /chat .* not found/);
    expectError(await post(shop, '/label/apply', { labelId: '777', chatId: customer }), 404, /label 777 not found/);

    expect(
      expectStatus(await post(shop, '/label/remove', { labelId: lead.labelId, chatId: customer, messageId: first.key.id }), 200).labels,
    ).toEqual([]);
    await events.next(shop.id, 'LABEL', (e) => e.data.action === 'remove' && e.data.messageId === first.key.id);
    expect(expectStatus(await post(shop, '/label/remove', { labelId: lead.labelId, chatId: customer }), 200).labels).toEqual([]);
    expect(expectStatus(await get(shop, `/chat/list?labelId=${lead.labelId}`), 200).total).toBe(0);

    // Deleting a label takes it off every chat.
    await post(shop, '/label/apply', { labelId: lead.labelId, chatId: customer });
    await post(shop, '/label/delete', { labelId: lead.labelId });
    expect(expectStatus(await get(shop, `/chat/info?chatId=${customer}`), 200).labels).toEqual([]);
  });
});
