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
import {
  contactSays,
  expectError,
  expectStatus,
  JPEG_DATA_URL,
  PNG_BASE64,
  sandboxAccount,
  instanceCalls,
} from '../../test/support/social.js';

describe('/user on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  const { get, post } = instanceCalls(() => gw);
  const jid = (number: string | undefined) => `${number}@s.whatsapp.net`;

  /** Two instances that have a chat with each other (so each is the other's contact). */
  async function acquainted(): Promise<[TestInstance, TestInstance]> {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    expectStatus(await post(a, '/send/text', { number: b.number, text: 'hello' }), 200);
    return [a, b];
  }

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
  });
  afterAll(async () => gw.stop());

  it('sets the own profile name, about and picture; people with a chat get CONTACT updates', async () => {
    const [a, b] = await acquainted();
    const profile = expectStatus(await get(a, '/user/profile'), 200);
    expect(profile).toEqual({
      jid: jid(a.number),
      number: a.number,
      name: a.name,
      about: null,
      pictureUrl: null,
      isBusiness: false,
      businessProfile: null,
    });

    expect(expectStatus(await post(a, '/user/profile/name', { name: 'Ana Bot' }), 200).name).toBe('Ana Bot');
    expect((await events.next(b.id, 'CONTACT', (e) => e.data.pushName === 'Ana Bot')).data).toEqual({
      id: jid(a.number),
      action: 'update',
      pushName: 'Ana Bot',
    });
    expect(expectStatus(await post(a, '/user/profile/about', { about: 'Available' }), 200).about).toBe('Available');
    await events.next(b.id, 'CONTACT', (e) => e.data.about === 'Available');
    const withPicture = expectStatus(await post(a, '/user/profile/picture', { image: JPEG_DATA_URL }), 200);
    expect(withPicture.pictureUrl).toBe(JPEG_DATA_URL);
    await events.next(b.id, 'CONTACT', (e) => e.data.id === jid(a.number) && typeof e.data.pictureId === 'string');

    const seen = expectStatus(await get(b, `/user/info?number=${a.number}`), 200);
    expect(seen).toMatchObject({
      jid: jid(a.number),
      name: 'Ana Bot',
      about: 'Available',
      pictureUrl: JPEG_DATA_URL,
      isBusiness: false,
      blocked: false,
    });
    expect(seen.aboutTimestamp).toBeGreaterThan(0);
    const avatar = expectStatus(await get(b, `/user/avatar?number=${a.number}`), 200);
    expect(avatar).toMatchObject({ jid: jid(a.number), url: JPEG_DATA_URL });
    expect(avatar.pictureId).toEqual(expect.any(String));

    expect(expectStatus(await post(a, '/user/profile/picture/remove'), 200).pictureUrl).toBeNull();
    await events.next(b.id, 'CONTACT', (e) => e.data.id === jid(a.number) && e.data.pictureId === null);
    expectError(await post(a, '/user/profile/picture/remove'), 404, /profile picture not found/);
    expectError(
      await post(a, '/user/profile/picture', { image: Buffer.from('just some text, not an image').toString('base64') }),
      400,
      /JPEG or PNG/,
    );
    expectError(await post(a, '/user/profile/name', { name: 'x'.repeat(26) }), 400, /name/);
  });

  it("shows profiles as their owners' privacy allows, and business profiles", async () => {
    const [a, b] = await acquainted();
    const stranger = await connectedInstance(gw, uniqueNumber());
    await post(a, '/user/profile/picture', { image: PNG_BASE64 });
    await post(a, '/user/profile/about', { about: 'secret-ish' });

    const privacy = expectStatus(await post(a, '/user/privacy', { profilePicture: 'contacts', about: 'none' }), 200);
    expect(privacy).toEqual({
      lastSeen: 'all',
      online: 'all',
      profilePicture: 'contacts',
      about: 'none',
      groupAdd: 'all',
      readReceipts: 'all',
      calls: 'all',
    });
    expect(expectStatus(await get(a, '/user/privacy'), 200)).toEqual(privacy);

    expect(expectStatus(await get(b, `/user/info?number=${a.number}`), 200)).toMatchObject({
      about: null,
      pictureUrl: `data:image/png;base64,${PNG_BASE64}`,
    });
    expect(expectStatus(await get(stranger, `/user/info?number=${a.number}`), 200)).toMatchObject({
      about: null,
      aboutTimestamp: null,
      pictureUrl: null,
    });
    expect(expectStatus(await get(stranger, `/user/avatar?number=${a.number}`), 200)).toEqual({
      jid: jid(a.number),
      pictureId: null,
      url: null,
    });

    const shop = uniqueNumber();
    await sandboxAccount(gw, {
      number: shop,
      pushName: 'Shop',
      business: true,
      businessProfile: { description: 'Bikes', email: 'shop@example.com', website: ['https://shop.example'] },
    });
    expect(expectStatus(await get(b, `/user/info?number=${shop}`), 200)).toMatchObject({
      name: 'Shop',
      isBusiness: true,
      businessProfile: {
        description: 'Bikes',
        email: 'shop@example.com',
        website: ['https://shop.example'],
        category: null,
        address: null,
      },
    });

    expectError(await get(b, `/user/info?number=${uniqueNumber()}`), 404, /not on the network/);
    expectError(await get(b, `/user/avatar?number=${uniqueNumber()}`), 404, /not on the network/);
    expectError(await post(a, '/user/privacy', { lastSeen: 'everybody' }), 400, /lastSeen/);
    expectError(await post(a, '/user/privacy', {}), 400, /fewer than 1|must NOT have fewer/);
  });

  it('lists contacts: the people the instance has a chat with', async () => {
    const [a, b] = await acquainted();
    const maria = uniqueNumber();
    await sandboxAccount(gw, { number: maria, pushName: 'Maria' });
    await contactSays(gw, maria, a.number!, 'oi');
    const contacts = expectStatus(await get(a, '/user/contacts'), 200);
    expect(contacts.total).toBe(2);
    expect(contacts.items).toContainEqual({ jid: jid(maria), number: maria, name: 'Maria', isBusiness: false });
    expect(contacts.items).toContainEqual({ jid: jid(b.number), number: b.number, name: b.name, isBusiness: false });
    expect(expectStatus(await get(a, '/user/contacts?limit=1'), 200)).toMatchObject({ total: 2, limit: 1 });
  });

  it('resolves LIDs and numbers both ways; unknown ones stay null; bad ids are a 400 naming them', async () => {
    const [a, b] = await acquainted();
    const first = expectStatus(await post(a, '/user/resolve', { ids: [b.number] }), 200);
    const lid = first.items[0].lid as string;
    expect(lid).toMatch(/^[0-9]{15}@lid$/);
    expect(first.items).toEqual([{ id: b.number, jid: jid(b.number), number: b.number, lid }]);

    const stranger = uniqueNumber();
    const answer = expectStatus(
      await post(a, '/user/resolve', { ids: [lid, `${b.number}:3@s.whatsapp.net`, '999999999999999@lid', stranger] }),
      200,
    );
    expect(answer.items).toEqual([
      { id: lid, jid: jid(b.number), number: b.number, lid },
      { id: `${b.number}:3@s.whatsapp.net`, jid: jid(b.number), number: b.number, lid },
      { id: '999999999999999@lid', jid: null, number: null, lid: '999999999999999@lid' },
      { id: stranger, jid: jid(stranger), number: stranger, lid: null },
    ]);
    // The same LID for the same person, whoever asks.
    expect(expectStatus(await post(b, '/user/resolve', { ids: [b.number] }), 200).items[0].lid).toBe(lid);

    expectError(await post(a, '/user/resolve', { ids: ['hello@g.us'] }), 400, /ids/);
    expectError(await post(a, '/user/resolve', { ids: [] }), 400, /fewer than 1/);
    expectError(await post(a, '/user/resolve', { ids: Array.from({ length: 101 }, () => b.number) }), 400, /more than 100/);
  });

  it('blocks and unblocks; blocked people see nothing and cannot add the instance to groups', async () => {
    const [a, b] = await acquainted();
    await post(a, '/user/profile/picture', { image: PNG_BASE64 });
    expect(expectStatus(await post(a, '/user/block', { number: b.number }), 200)).toEqual({
      jid: jid(b.number),
      number: b.number,
      blocked: true,
    });
    expect((await events.next(a.id, 'CONTACT', (e) => e.data.action === 'block')).data).toEqual({ id: jid(b.number), action: 'block' });
    expect(expectStatus(await post(a, '/user/block', { number: b.number }), 200).blocked).toBe(true);
    expect(expectStatus(await get(a, '/user/blocklist'), 200)).toMatchObject({
      items: [{ jid: jid(b.number), number: b.number }],
      total: 1,
    });
    expect(expectStatus(await get(a, `/user/info?number=${b.number}`), 200).blocked).toBe(true);

    expect(expectStatus(await get(b, `/user/info?number=${a.number}`), 200).pictureUrl).toBeNull();
    const group = expectStatus(await post(b, '/group/create', { subject: 'Blocked', participants: [a.number] }), 201);
    expect(group.results[0].status).toBe('privacy_restricted');

    expectStatus(await post(a, '/user/unblock', { number: b.number }), 200);
    await events.next(a.id, 'CONTACT', (e) => e.data.action === 'unblock');
    expect(expectStatus(await get(a, '/user/blocklist'), 200).total).toBe(0);
    expect(expectStatus(await get(b, `/user/info?number=${a.number}`), 200).pictureUrl).not.toBeNull();
    expectError(await post(a, '/user/block', { number: a.number }), 400, /cannot block itself/);
  });

  it("subscribes to presence; PRESENCE follows the other's privacy", async () => {
    const [a, b] = await acquainted();
    const stranger = await connectedInstance(gw, uniqueNumber());
    const none = expectStatus(await post(b, '/user/presence/subscribe', { number: a.number }), 200);
    expect(none).toEqual({ jid: jid(a.number), subscribed: true, presence: null });
    expectStatus(await post(stranger, '/user/presence/subscribe', { number: a.number }), 200);

    expect(expectStatus(await post(a, '/user/presence', { presence: 'available' }), 200)).toEqual({ presence: 'available' });
    expect((await events.next(b.id, 'PRESENCE', (e) => e.data.id === jid(a.number))).data).toEqual({
      id: jid(a.number),
      presence: 'available',
    });
    await events.next(stranger.id, 'PRESENCE', (e) => e.data.id === jid(a.number));

    // Last seen only for contacts: the stranger sees "offline" without a time, B sees the time.
    expectStatus(await post(a, '/user/privacy', { lastSeen: 'contacts' }), 200);
    expectStatus(await post(a, '/user/presence', { presence: 'unavailable' }), 200);
    const forB = await events.next(b.id, 'PRESENCE', (e) => e.data.presence === 'unavailable');
    expect(forB.data.lastSeen).toEqual(expect.any(Number));
    const forStranger = await events.next(stranger.id, 'PRESENCE', (e) => e.data.presence === 'unavailable');
    expect(forStranger.data).toEqual({ id: jid(a.number), presence: 'unavailable' });

    const current = expectStatus(await post(b, '/user/presence/subscribe', { number: a.number }), 200);
    expect(current.presence).toMatchObject({ jid: jid(a.number), presence: 'unavailable', lastSeen: expect.any(Number) });
    expectError(await post(b, '/user/presence/subscribe', { number: uniqueNumber() }), 404, /not on the network/);
    expectError(await post(b, '/user/presence', { presence: 'composing' }), 400, /presence/);
  });

  it('makes the read-receipt privacy decide whether marking read tells the sender', async () => {
    const [a, b] = await acquainted();
    expectStatus(await post(b, '/user/privacy', { readReceipts: 'none' }), 200);
    const sent = expectStatus(await post(a, '/send/text', { number: b.number, text: 'did you read this?' }), 200);
    expectStatus(await post(b, '/chat/mark-read', { chatId: a.number }), 200);
    await gw.bus.settled();
    expect(events.of(a.id, 'READ_RECEIPT').filter((e) => e.data.key.id === sent.key.id)).toEqual([]);
  });
});
