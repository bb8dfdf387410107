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
import { expectError, expectStatus, instanceCalls } from '../../test/support/social.js';

describe('/community on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let a: TestInstance;
  let b: TestInstance;
  let c: TestInstance;
  const { get, post } = instanceCalls(() => gw);
  const jid = (who: TestInstance) => `${who.number}@s.whatsapp.net`;
  const newGroup = async (owner: TestInstance, participants: TestInstance[], subject: string) =>
    expectStatus(await post(owner, '/group/create', { subject, participants: participants.map((p) => p.number) }), 201).group
      .groupId as string;

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
    [a, b, c] = [
      await connectedInstance(gw, uniqueNumber()),
      await connectedInstance(gw, uniqueNumber()),
      await connectedInstance(gw, uniqueNumber()),
    ];
  });
  afterAll(async () => gw.stop());

  it('creates a community with its announcement group', async () => {
    const community = expectStatus(await post(a, '/community/create', { subject: 'Neighbours', description: 'Our street' }), 201);
    expect(community).toMatchObject({
      subject: 'Neighbours',
      description: 'Our street',
      owner: jid(a),
      groups: [],
      size: 1,
      role: 'admin',
    });
    expect(community.communityId).toMatch(/@g\.us$/);
    const created = await events.next(a.id, 'GROUP', (e) => e.data.id === community.communityId && e.data.action === 'create');
    expect(created.data).toMatchObject({ isCommunity: true, announceGroupId: community.announceGroupId, subject: 'Neighbours' });

    const announce = expectStatus(await get(a, `/group/info?groupId=${community.announceGroupId}`), 200);
    expect(announce).toMatchObject({ isCommunityAnnounce: true, communityId: community.communityId, announce: true, locked: true });
    expect(expectStatus(await get(a, '/community/list'), 200).items.map((x: any) => x.communityId)).toContain(community.communityId);
    expect(expectStatus(await get(a, `/community/info?communityId=${community.communityId}`), 200)).toEqual(community);
    expectError(await get(b, `/community/info?communityId=${community.communityId}`), 403, /not a member/);
    expectError(await get(b, '/community/info?communityId=1203631111@g.us'), 404, /community .* not found/);
    expectError(await get(a, `/group/invite-link?groupId=${community.announceGroupId}`), 409, /announcement group has no invite link/);
    expectError(
      await post(a, '/group/participants/add', { groupId: community.announceGroupId, participants: [b.number] }),
      409,
      /follow its linked groups/,
    );
    expectError(await post(a, '/group/leave', { groupId: community.announceGroupId }), 409, /cannot be left on its own/);
  });

  it('links groups (admin of both needed); their participants become members; unlinks them', async () => {
    const community = expectStatus(await post(a, '/community/create', { subject: 'School' }), 201);
    const { communityId, announceGroupId } = community;
    const parents = await newGroup(a, [b], 'Parents');
    const foreign = await newGroup(c, [a], 'Run by C');

    expectError(await post(a, '/community/link', { communityId, groupIds: [foreign] }), 403, /must be an admin of group/);
    expectError(await post(b, '/community/link', { communityId, groupIds: [parents] }), 403, /not a member/);
    expectError(await post(a, '/community/link', { communityId, groupIds: ['1203632222@g.us'] }), 404, /not found/);

    const linked = expectStatus(await post(a, '/community/link', { communityId, groupIds: [parents] }), 200);
    expect(linked).toMatchObject({ groups: [{ groupId: parents, subject: 'Parents' }], size: 2 });
    await events.next(
      b.id,
      'GROUP',
      (e) => e.data.id === announceGroupId && e.data.action === 'add' && e.data.participants.includes(jid(b)),
    );
    expect((await events.next(b.id, 'GROUP', (e) => e.data.id === communityId && e.data.action === 'link')).data.groups).toEqual([parents]);
    expect(expectStatus(await get(b, `/community/info?communityId=${communityId}`), 200).role).toBe('member');
    expect(expectStatus(await get(a, `/group/info?groupId=${parents}`), 200).communityId).toBe(communityId);

    const groups = expectStatus(await get(b, `/community/groups?communityId=${communityId}`), 200);
    expect(groups.items.map((g: any) => g.groupId)).toEqual([announceGroupId, parents]);
    expect(groups.total).toBe(2);

    // Joining a linked group makes one a member; a group of another community is refused.
    expectStatus(await post(a, '/group/participants/add', { groupId: parents, participants: [c.number] }), 200);
    await events.next(c.id, 'GROUP', (e) => e.data.id === announceGroupId && e.data.action === 'add');
    const other = expectStatus(await post(a, '/community/create', { subject: 'Other' }), 201);
    expectError(
      await post(a, '/community/link', { communityId: other.communityId, groupIds: [parents] }),
      409,
      /already belongs to community/,
    );

    const unlinked = expectStatus(await post(a, '/community/unlink', { communityId, groupIds: [parents] }), 200);
    expect(unlinked).toMatchObject({ groups: [], size: 1 });
    await events.next(b.id, 'GROUP', (e) => e.data.id === announceGroupId && e.data.action === 'remove');
    await events.next(b.id, 'GROUP', (e) => e.data.id === communityId && e.data.action === 'unlink');
    expectError(await get(b, `/community/info?communityId=${communityId}`), 403, /not a member/);
    expectError(await post(a, '/community/unlink', { communityId, groupIds: [parents] }), 409, /not linked/);
  });

  it('posts announcements to every member; only admins announce', async () => {
    const { communityId, announceGroupId } = expectStatus(await post(a, '/community/create', { subject: 'Club' }), 201);
    const members = await newGroup(a, [b, c], 'Members');
    expectStatus(await post(a, '/community/link', { communityId, groupIds: [members] }), 200);

    const sent = expectStatus(await post(a, '/community/announce', { communityId, text: 'Meeting on Friday' }), 200);
    expect(sent).toMatchObject({
      key: { remoteJid: announceGroupId, fromMe: true },
      status: 'SENT',
      message: { conversation: 'Meeting on Friday' },
    });
    for (const member of [b, c]) {
      const message = await events.next(member.id, 'MESSAGE', (e) => e.data.key.id === sent.key.id);
      expect(message.data).toMatchObject({
        key: { remoteJid: announceGroupId, fromMe: false },
        participant: jid(a),
        message: { conversation: 'Meeting on Friday' },
      });
    }
    await events.next(a.id, 'SEND_MESSAGE', (e) => e.data.key.id === sent.key.id);
    const chat = expectStatus(await get(b, `/chat/info?chatId=${announceGroupId}`), 200);
    expect(chat).toMatchObject({ kind: 'group', name: 'Club', unreadCount: 1 });
    expect(chat.lastMessage).toMatchObject({ participant: jid(a) });

    expectError(await post(b, '/community/announce', { communityId, text: 'me too' }), 403, /only community admins/);
    expectError(await post(b, '/community/unlink', { communityId, groupIds: [members] }), 403, /only community admins/);
    expectError(await post(a, '/community/announce', { communityId, text: '' }), 400, /text/);
  });
});
