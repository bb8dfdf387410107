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
import { expectError, expectStatus, PNG_BASE64, instanceCalls } from '../../test/support/social.js';

describe('/newsletter on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let owner: TestInstance;
  let follower: TestInstance;
  const { get, post } = instanceCalls(() => gw);
  const newsletterEvent = (who: TestInstance, id: string, action: string) =>
    events.next(who.id, 'NEWSLETTER', (e) => e.data.id === id && e.data.action === action);

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
    owner = await connectedInstance(gw, uniqueNumber());
    follower = await connectedInstance(gw, uniqueNumber());
  });
  afterAll(async () => gw.stop());

  it('creates a newsletter that anyone can look up by id or invite link, and follows it', async () => {
    const created = expectStatus(
      await post(owner, '/newsletter/create', { name: 'Daily News', description: 'Every day', picture: PNG_BASE64 }),
      201,
    );
    expect(created).toMatchObject({
      name: 'Daily News',
      description: 'Every day',
      pictureUrl: `data:image/png;base64,${PNG_BASE64}`,
      role: 'owner',
      muted: false,
      followers: 0,
      verified: false,
    });
    expect(created.newsletterId).toMatch(/^\d+@newsletter$/);
    expect(created.inviteLink).toBe(`https://whatsapp.com/channel/${created.inviteCode}`);
    expect((await newsletterEvent(owner, created.newsletterId, 'create')).data.name).toBe('Daily News');
    expect(expectStatus(await get(owner, '/newsletter/list?role=owner'), 200).items.map((n: any) => n.newsletterId)).toEqual([
      created.newsletterId,
    ]);

    const byId = expectStatus(await get(follower, `/newsletter/info?newsletterId=${created.newsletterId}`), 200);
    expect(byId).toMatchObject({ newsletterId: created.newsletterId, role: 'guest' });
    const byLink = expectStatus(await get(follower, `/newsletter/info?inviteCode=${encodeURIComponent(created.inviteLink)}`), 200);
    expect(byLink).toEqual(byId);
    expectError(await get(follower, '/newsletter/info?inviteCode=unknown0000'), 404, /invite code is invalid/);
    expectError(await get(follower, '/newsletter/info?newsletterId=1203639999@newsletter'), 404, /not found/);
    expectError(await get(follower, '/newsletter/info'), 400, /fewer than 1|must NOT have fewer/);
    expectError(
      await get(follower, `/newsletter/info?newsletterId=${created.newsletterId}&inviteCode=x`),
      400,
      /more than 1|must NOT have more/,
    );

    const followed = expectStatus(await post(follower, '/newsletter/follow', { newsletterId: created.newsletterId }), 200);
    expect(followed).toMatchObject({ role: 'subscriber', followers: 1, muted: false });
    await newsletterEvent(follower, created.newsletterId, 'follow');
    expectError(await post(follower, '/newsletter/follow', { newsletterId: created.newsletterId }), 409, /already following/);
    expectError(await post(owner, '/newsletter/follow', { newsletterId: created.newsletterId }), 409, /you own/);
    expect(expectStatus(await get(follower, '/newsletter/list'), 200).items.map((n: any) => [n.newsletterId, n.role])).toContainEqual([
      created.newsletterId,
      'subscriber',
    ]);
    expect(expectStatus(await get(follower, '/newsletter/list?role=owner'), 200).total).toBe(0);
  });

  it('posts to followers as MESSAGE events; only the owner posts; posts are paged', async () => {
    const { newsletterId } = expectStatus(await post(owner, '/newsletter/create', { name: 'Posts' }), 201);
    expectStatus(await post(follower, '/newsletter/follow', { newsletterId }), 200);

    const sent = expectStatus(await post(owner, '/newsletter/send', { newsletterId, text: 'first post' }), 200);
    expect(sent).toMatchObject({
      key: { remoteJid: newsletterId, fromMe: true },
      status: 'SENT',
      message: { conversation: 'first post' },
      serverId: 100,
    });
    await events.next(owner.id, 'SEND_MESSAGE', (e) => e.data.key.id === sent.key.id);
    const received = await events.next(follower.id, 'MESSAGE', (e) => e.data.key.id === sent.key.id);
    expect(received.data).toMatchObject({
      key: { remoteJid: newsletterId, fromMe: false },
      pushName: 'Posts',
      message: { conversation: 'first post' },
      serverId: 100,
    });
    expectStatus(await post(owner, '/newsletter/send', { newsletterId, text: 'second post' }), 200);

    const page = expectStatus(await get(follower, `/newsletter/messages?newsletterId=${newsletterId}&limit=1`), 200);
    expect(page).toMatchObject({ total: 2, limit: 1 });
    expect(page.items[0]).toMatchObject({ serverId: 101, message: { conversation: 'second post' }, key: { fromMe: false } });
    expectError(await post(follower, '/newsletter/send', { newsletterId, text: 'hijack' }), 403, /only the owner/);

    // The follower's chat list has the newsletter with its last post.
    const chat = expectStatus(await get(follower, `/chat/info?chatId=${newsletterId}`), 200);
    expect(chat).toMatchObject({
      kind: 'newsletter',
      name: 'Posts',
      unreadCount: 2,
      lastMessage: { message: { conversation: 'second post' } },
    });
  });

  it('mutes and unmutes for followers only; unfollows', async () => {
    const { newsletterId } = expectStatus(await post(owner, '/newsletter/create', { name: 'Quiet' }), 201);
    expectError(await post(follower, '/newsletter/mute', { newsletterId }), 409, /follow newsletter .* before muting/);
    await post(follower, '/newsletter/follow', { newsletterId });
    expect(expectStatus(await post(follower, '/newsletter/mute', { newsletterId }), 200).muted).toBe(true);
    await newsletterEvent(follower, newsletterId, 'mute');
    expect(expectStatus(await post(follower, '/newsletter/unmute', { newsletterId }), 200).muted).toBe(false);
    await newsletterEvent(follower, newsletterId, 'unmute');

    expect(expectStatus(await post(follower, '/newsletter/unfollow', { newsletterId }), 200)).toMatchObject({
      role: 'guest',
      followers: 0,
    });
    await newsletterEvent(follower, newsletterId, 'unfollow');
    expectError(await post(follower, '/newsletter/unfollow', { newsletterId }), 409, /not following/);
  });

  it('lets only the owner change and delete a newsletter; followers hear about it', async () => {
    const { newsletterId } = expectStatus(await post(owner, '/newsletter/create', { name: 'Old name', picture: PNG_BASE64 }), 201);
    await post(follower, '/newsletter/follow', { newsletterId });
    expectError(await post(follower, '/newsletter/update', { newsletterId, name: 'Mine now' }), 403, /only the owner/);
    const updated = expectStatus(
      await post(owner, '/newsletter/update', { newsletterId, name: 'New name', description: 'Fresh', picture: null }),
      200,
    );
    expect(updated).toMatchObject({ name: 'New name', description: 'Fresh', pictureUrl: null });
    expect((await newsletterEvent(follower, newsletterId, 'update')).data.changes).toEqual({
      name: 'New name',
      description: 'Fresh',
      pictureId: null,
    });
    expectError(await post(owner, '/newsletter/update', { newsletterId }), 400, /fewer than 2|must NOT have fewer/);

    expectError(await post(follower, '/newsletter/delete', { newsletterId }), 403, /only the owner/);
    expect(expectStatus(await post(owner, '/newsletter/delete', { newsletterId }), 200)).toEqual({ newsletterId, deleted: true });
    await newsletterEvent(follower, newsletterId, 'delete');
    expectError(await get(follower, `/newsletter/info?newsletterId=${newsletterId}`), 404, /not found/);
    expectError(await post(owner, '/newsletter/send', { newsletterId, text: 'gone' }), 404, /not found/);
  });
});
