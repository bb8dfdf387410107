/**
 * The WhatsApp driver's GroupOperations through Baileys itself: a linked session's real socket talks
 * to the local WhatsApp stand-in, which answers the `w:g2` and `w:profile:picture` queries with
 * recorded replies (fixtures/baileys-payloads.ts). Each test checks the query WhatsApp receives,
 * the port result built from the reply, and how WhatsApp's refusals reach the API.
 */
import { getBinaryNodeChild, getBinaryNodeChildren, type BinaryNode } from 'baileys';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GroupOperations } from '../port.js';
import { CONTACT_PN, groupNode, PARTICIPANT_LID, PARTICIPANT_PN, participantNodes } from './fixtures/baileys-payloads.js';
import { iqChild, type FakeWaServer } from './fixtures/fake-wa-server.js';
import { linkedRig, type Linked, serveGroupMetadata } from './fixtures/linked-session.js';

const ME = '5511999999999@s.whatsapp.net';

const rig = linkedRig();
let server: FakeWaServer;
let linked: Linked;
let groups: GroupOperations;
let counter = 0;

beforeAll(() => {
  ({ server, linked } = rig);
  groups = linked.session.groups!;
});

/** A group id of its own per test, so the session's metadata cache never carries over. */
function nextGroup(): string {
  counter += 1;
  return `1203630000000${String(counter).padStart(5, '0')}@g.us`;
}

function children(node: BinaryNode | undefined): BinaryNode[] {
  return Array.isArray(node?.content) ? node.content : [];
}

describe('whatsapp groups: reading', () => {
  it('info sends a w:g2 interactive query and maps the metadata (LID participant shown by phone); a second read comes from the cache', async () => {
    const groupId = nextGroup();
    const hook = serveGroupMetadata(
      server,
      groupId,
      groupNode({
        id: groupId,
        description: 'Our team',
        flags: ['announcement', 'membership_approval_mode'],
        ephemeral: 604_800,
        memberAddMode: 'all_member_add',
      }),
    );

    const info = await groups.info(groupId);

    expect(hook.calls).toHaveLength(1);
    expect(hook.calls[0]).toMatchObject({
      tag: 'iq',
      attrs: { type: 'get', xmlns: 'w:g2', to: groupId },
      content: [{ tag: 'query', attrs: { request: 'interactive' } }],
    });
    expect(info).toEqual({
      groupId,
      subject: 'Team',
      subjectOwner: CONTACT_PN,
      subjectTimestamp: 1_780_000_010,
      description: 'Our team',
      owner: ME,
      creation: 1_780_000_000,
      size: 3,
      participants: [
        { jid: ME, number: '5511999999999', role: 'superadmin' },
        { jid: CONTACT_PN, number: '5511988887777', role: 'admin' },
        { jid: PARTICIPANT_PN, number: '5511977776666', role: 'member' },
      ],
      announce: true,
      locked: false,
      joinApproval: true,
      ephemeral: 604_800,
      memberAddMode: 'all',
      communityId: null,
      isCommunityAnnounce: false,
    });
    expect(await groups.info(groupId)).toEqual(info);
    expect(hook.calls).toHaveLength(1);
  });

  it('maps WhatsApp refusals: 403 forbidden, 404 item-not-found, 401 not-authorized', async () => {
    const forbidden = nextGroup();
    server.onIq({ xmlns: 'w:g2', to: forbidden }, { error: { code: 403, text: 'forbidden' } });
    await expect(groups.info(forbidden)).rejects.toMatchObject({ status: 403, code: 'forbidden' });

    const unknown = nextGroup();
    server.onIq({ xmlns: 'w:g2', to: unknown }, { error: { code: 404, text: 'item-not-found' } });
    await expect(groups.info(unknown)).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
      message: expect.stringContaining(`group ${unknown} not found`),
    });

    const left = nextGroup();
    server.onIq({ xmlns: 'w:g2', to: left }, { error: { code: 401, text: 'not-authorized' } });
    await expect(groups.info(left)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('list asks for the participating groups and leaves communities (parents) out, newest first', async () => {
    const older = nextGroup();
    const newer = nextGroup();
    const community = nextGroup();
    const newerNode = groupNode({ id: newer, subject: 'Newer' });
    newerNode.attrs.creation = '1780000500';
    const hook = server.onIq(
      { xmlns: 'w:g2', child: 'participating' },
      {
        content: [
          {
            tag: 'groups',
            attrs: {},
            content: [
              groupNode({ id: older, subject: 'Older' }),
              newerNode,
              groupNode({ id: community, subject: 'Community', flags: ['parent'] }),
            ],
          },
        ],
      },
    );

    const page = await groups.list({ offset: 0, limit: 10 });

    expect(hook.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'w:g2', to: '@g.us' },
      content: [{ tag: 'participating', content: [{ tag: 'participants' }, { tag: 'description' }] }],
    });
    expect(page.total).toBe(2);
    expect(page.items.map((g) => [g.groupId, g.subject])).toEqual([
      [newer, 'Newer'],
      [older, 'Older'],
    ]);
    expect((await groups.list({ offset: 1, limit: 1 })).items.map((g) => g.groupId)).toEqual([older]);
  });

  it('invite info reads the preview of a code; a revoked code (410 gone) is a 404', async () => {
    const groupId = nextGroup();
    const hook = server.onIq((iq) => iq.attrs.to === '@g.us' && iqChild(iq)?.tag === 'invite' && iq.attrs.type === 'get', {
      content: [groupNode({ id: groupId, subject: 'Open group', description: 'Welcome', flags: ['membership_approval_mode'] })],
    });
    const preview = await groups.inviteInfo('AbCdEfGh1234');
    expect(hook.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'w:g2', to: '@g.us' },
      content: [{ tag: 'invite', attrs: { code: 'AbCdEfGh1234' } }],
    });
    expect(preview).toEqual({
      groupId,
      subject: 'Open group',
      description: 'Welcome',
      owner: ME,
      creation: 1_780_000_000,
      size: 3,
      joinApproval: true,
      isCommunity: false,
    });

    hook.remove();
    server.onIq({ xmlns: 'w:g2', child: 'invite' }, { error: { code: 410, text: 'gone' } });
    await expect(groups.inviteInfo('Revoked')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('picture reads id and url; a group without a picture (404) has an empty one', async () => {
    const groupId = nextGroup();
    const hook = server.onIq(
      { xmlns: 'w:profile:picture', type: 'get' },
      { content: [{ tag: 'picture', attrs: { id: '1780000777', url: 'https://pps.whatsapp.net/v/t61/group.jpg', type: 'image' } }] },
    );
    expect(await groups.picture(groupId)).toEqual({
      jid: groupId,
      pictureId: '1780000777',
      url: 'https://pps.whatsapp.net/v/t61/group.jpg',
    });
    expect(hook.calls[0]).toMatchObject({
      attrs: { target: groupId, to: '@s.whatsapp.net', type: 'get', xmlns: 'w:profile:picture' },
      content: [{ tag: 'picture', attrs: { type: 'image', query: 'url' } }],
    });

    hook.remove();
    server.onIq({ xmlns: 'w:profile:picture' }, { error: { code: 404, text: 'item-not-found' } });
    expect(await groups.picture(groupId)).toEqual({ jid: groupId, pictureId: null, url: null });
  });

  it('join requests list the pending people by phone (LID requests resolved), paged', async () => {
    const groupId = nextGroup();
    const hook = server.onIq(
      { xmlns: 'w:g2', to: groupId, child: 'membership_approval_requests' },
      {
        content: [
          {
            tag: 'membership_approval_requests',
            attrs: {},
            content: [
              {
                tag: 'membership_approval_request',
                attrs: { jid: PARTICIPANT_LID, phone_number: PARTICIPANT_PN, request_time: '1780000300', request_method: 'invite_link' },
              },
              { tag: 'membership_approval_request', attrs: { jid: CONTACT_PN, request_time: '1780000400', request_method: 'invite_link' } },
            ],
          },
        ],
      },
    );
    const page = await groups.joinRequests(groupId, { offset: 0, limit: 1 });
    expect(hook.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'w:g2', to: groupId },
      content: [{ tag: 'membership_approval_requests' }],
    });
    expect(page).toEqual({ items: [{ jid: PARTICIPANT_PN, number: '5511977776666', requestedAt: 1_780_000_300 }], total: 2 });
  });
});

describe('whatsapp groups: changes', () => {
  it('create sends <create subject key> with the participants; per-person errors become outcomes; the description follows', async () => {
    const groupId = nextGroup();
    const created = server.onIq(
      { xmlns: 'w:g2', child: 'create' },
      {
        content: [
          groupNode({
            id: groupId,
            subject: 'New team',
            participants: [
              { jid: ME, type: 'superadmin' },
              { jid: CONTACT_PN },
              { jid: PARTICIPANT_PN, error: '403' },
              { jid: '5511900000000@s.whatsapp.net', error: '404' },
            ],
          }),
        ],
      },
    );
    const after = groupNode({
      id: groupId,
      subject: 'New team',
      description: 'Kick-off',
      participants: [{ jid: ME, type: 'superadmin' }, { jid: CONTACT_PN }],
    });
    serveGroupMetadata(server, groupId, after);
    const description = server.onIq({ xmlns: 'w:g2', to: groupId, child: 'description' }, {});

    const { group, results } = await groups.create('New team', ['5511988887777', '5511977776666', '5511900000000'], 'Kick-off');

    const create = iqChild(created.calls[0]!);
    expect(created.calls[0]).toMatchObject({ attrs: { type: 'set', xmlns: 'w:g2', to: '@g.us' } });
    expect(create?.attrs.subject).toBe('New team');
    expect(create?.attrs.key).toMatch(/^[0-9A-F]+$/);
    expect(children(create).map((p) => p.attrs.jid)).toEqual([CONTACT_PN, PARTICIPANT_PN, '5511900000000@s.whatsapp.net']);
    expect(results).toEqual([
      { number: '5511988887777', jid: CONTACT_PN, status: 'ok' },
      { number: '5511977776666', jid: PARTICIPANT_PN, status: 'privacy_restricted' },
      { number: '5511900000000', jid: '5511900000000@s.whatsapp.net', status: 'not_on_network' },
    ]);
    const set = iqChild(description.calls[0]!);
    expect(set?.attrs).toMatchObject({ prev: 'DESC0001' });
    expect(Buffer.from(getBinaryNodeChild(set, 'body')!.content as Uint8Array).toString()).toBe('Kick-off');
    expect(group).toMatchObject({ groupId, subject: 'New team', description: 'Kick-off', size: 2 });
  });

  it('participants: <promote> with each person; the answer per person becomes the outcome; 403 (not admin) is forbidden', async () => {
    const groupId = nextGroup();
    const hook = server.onIq(
      { xmlns: 'w:g2', to: groupId, child: 'promote' },
      {
        content: [
          {
            tag: 'promote',
            attrs: {},
            content: participantNodes([{ jid: CONTACT_PN }, { jid: '5511900000000@s.whatsapp.net', error: '404' }]),
          },
        ],
      },
    );
    const results = await groups.updateParticipants(groupId, 'promote', ['5511988887777', '5511900000000']);
    expect(hook.calls[0]).toMatchObject({
      attrs: { type: 'set', xmlns: 'w:g2', to: groupId },
      content: [
        {
          tag: 'promote',
          content: [
            { tag: 'participant', attrs: { jid: CONTACT_PN } },
            { tag: 'participant', attrs: { jid: '5511900000000@s.whatsapp.net' } },
          ],
        },
      ],
    });
    expect(results).toEqual([
      { number: '5511988887777', jid: CONTACT_PN, status: 'ok' },
      { number: '5511900000000', jid: '5511900000000@s.whatsapp.net', status: 'not_participant' },
    ]);

    // In a LID-addressed group the answer names the person by LID with the phone beside it.
    const added = server.onIq(
      { xmlns: 'w:g2', to: groupId, child: 'add' },
      {
        content: [
          { tag: 'add', attrs: {}, content: participantNodes([{ jid: PARTICIPANT_LID, phone_number: PARTICIPANT_PN, error: '409' }]) },
        ],
      },
    );
    expect(await groups.updateParticipants(groupId, 'add', ['5511977776666'])).toEqual([
      { number: '5511977776666', jid: PARTICIPANT_PN, status: 'already_participant' },
    ]);
    expect(added.calls).toHaveLength(1);

    server.onIq({ xmlns: 'w:g2', to: groupId, child: 'remove' }, { error: { code: 403, text: 'forbidden' } });
    await expect(groups.updateParticipants(groupId, 'remove', ['5511988887777'])).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('subject: <subject> with the text, then fresh metadata; 406 (too long) is a 400', async () => {
    const groupId = nextGroup();
    const metadata = serveGroupMetadata(server, groupId, groupNode({ id: groupId, subject: 'Renamed' }));
    const subject = server.onIq({ xmlns: 'w:g2', to: groupId, child: 'subject' }, {});
    const info = await groups.setSubject(groupId, 'Renamed');
    expect(Buffer.from(iqChild(subject.calls[0]!)!.content as Uint8Array).toString()).toBe('Renamed');
    expect(subject.calls[0]!.attrs).toMatchObject({ type: 'set', xmlns: 'w:g2' });
    expect(info.subject).toBe('Renamed');
    expect(metadata.calls).toHaveLength(1);

    subject.remove();
    server.onIq({ xmlns: 'w:g2', to: groupId, child: 'subject' }, { error: { code: 406, text: 'not-acceptable' } });
    await expect(groups.setSubject(groupId, 'x'.repeat(200))).rejects.toMatchObject({ status: 400, code: 'bad_request' });
  });

  it('an empty description deletes it (delete="true" with the previous id)', async () => {
    const groupId = nextGroup();
    serveGroupMetadata(server, groupId, groupNode({ id: groupId, description: 'Old', descId: 'DESCOLD1' }));
    const description = server.onIq({ xmlns: 'w:g2', to: groupId, child: 'description' }, {});
    await groups.setDescription(groupId, '');
    expect(iqChild(description.calls[0]!)).toMatchObject({ tag: 'description', attrs: { delete: 'true', prev: 'DESCOLD1' } });
  });

  it('settings: one query per changed setting, none for unchanged ones; WhatsApp-only timers', async () => {
    const groupId = nextGroup();
    const metadata = serveGroupMetadata(server, groupId, groupNode({ id: groupId, flags: ['locked'] }));
    const sets = server.onIq({ xmlns: 'w:g2', to: groupId, type: 'set' }, {});

    await groups.updateSettings(groupId, { announce: true, locked: true, joinApproval: true, ephemeral: 86_400, memberAddMode: 'all' });

    expect(sets.calls.map((iq) => iqChild(iq))).toEqual([
      { tag: 'announcement', attrs: {} },
      { tag: 'membership_approval_mode', attrs: {}, content: [{ tag: 'group_join', attrs: { state: 'on' } }] },
      { tag: 'ephemeral', attrs: { expiration: '86400' } },
      { tag: 'member_add_mode', attrs: {}, content: expect.anything() },
    ]);
    expect(Buffer.from(iqChild(sets.calls[3]!)!.content as Uint8Array).toString()).toBe('all_member_add');
    // Read once for the current settings, once after the change.
    expect(metadata.calls).toHaveLength(2);
    await expect(groups.updateSettings(groupId, { ephemeral: 3600 })).rejects.toMatchObject({ status: 400 });
  });

  it('invite code: get and revoke read <invite code>; join answers joined or requested', async () => {
    const groupId = nextGroup();
    const get = server.onIq(
      { xmlns: 'w:g2', to: groupId, type: 'get', child: 'invite' },
      { content: [{ tag: 'invite', attrs: { code: 'CodeOne123' } }] },
    );
    const revoke = server.onIq(
      { xmlns: 'w:g2', to: groupId, type: 'set', child: 'invite' },
      { content: [{ tag: 'invite', attrs: { code: 'CodeTwo456' } }] },
    );
    expect(await groups.inviteCode(groupId)).toBe('CodeOne123');
    expect(await groups.revokeInvite(groupId)).toBe('CodeTwo456');
    expect(get.calls).toHaveLength(1);
    expect(revoke.calls).toHaveLength(1);

    const join = server.onIq(
      { xmlns: 'w:g2', to: '@g.us', type: 'set', child: 'invite' },
      { content: [{ tag: 'group', attrs: { jid: groupId } }] },
      { times: 1 },
    );
    expect(await groups.join('CodeTwo456')).toEqual({ groupId, status: 'joined' });
    expect(iqChild(join.calls[0]!)).toEqual({ tag: 'invite', attrs: { code: 'CodeTwo456' } });
    server.onIq(
      { xmlns: 'w:g2', to: '@g.us', type: 'set', child: 'invite' },
      { content: [{ tag: 'membership_approval_request', attrs: { jid: groupId } }] },
      { times: 1 },
    );
    expect(await groups.join('CodeTwo456')).toEqual({ groupId, status: 'requested' });
    server.onIq({ xmlns: 'w:g2', to: '@g.us', type: 'set', child: 'invite' }, { error: { code: 409, text: 'conflict' } }, { times: 1 });
    await expect(groups.join('CodeTwo456')).rejects.toMatchObject({ status: 409, code: 'conflict' });
  });

  it('join requests: approve sends <membership_requests_action><approve>; a missing request is no_request', async () => {
    const groupId = nextGroup();
    const hook = server.onIq(
      { xmlns: 'w:g2', to: groupId, child: 'membership_requests_action' },
      {
        content: [
          {
            tag: 'membership_requests_action',
            attrs: {},
            content: [
              { tag: 'approve', attrs: {}, content: participantNodes([{ jid: CONTACT_PN }, { jid: PARTICIPANT_PN, error: '404' }]) },
            ],
          },
        ],
      },
    );
    const results = await groups.handleJoinRequests(groupId, 'approve', ['5511988887777', '5511977776666']);
    expect(getBinaryNodeChildren(getBinaryNodeChild(iqChild(hook.calls[0]!), 'approve'), 'participant').map((p) => p.attrs.jid)).toEqual([
      CONTACT_PN,
      PARTICIPANT_PN,
    ]);
    expect(results.map((r) => r.status)).toEqual(['ok', 'no_request']);
  });

  it('leave sends <leave><group id/></leave> to @g.us', async () => {
    const groupId = nextGroup();
    const hook = server.onIq({ xmlns: 'w:g2', to: '@g.us', child: 'leave' }, {});
    await groups.leave(groupId);
    expect(iqChild(hook.calls[0]!)).toEqual({ tag: 'leave', attrs: {}, content: [{ tag: 'group', attrs: { id: groupId } }] });
  });

  it('set picture sends a JPEG to w:profile:picture for the group, then reads it back; remove sends an empty set', async () => {
    const groupId = nextGroup();
    const set = server.onIq({ xmlns: 'w:profile:picture', type: 'set' }, {});
    server.onIq(
      { xmlns: 'w:profile:picture', type: 'get' },
      { content: [{ tag: 'picture', attrs: { id: '1780000888', url: 'https://pps.whatsapp.net/v/t61/new.jpg' } }] },
    );
    const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#3366ff' } })
      .png()
      .toBuffer();

    expect(await groups.setPicture(groupId, { data: png, mimetype: 'image/png' })).toEqual({
      jid: groupId,
      pictureId: '1780000888',
      url: 'https://pps.whatsapp.net/v/t61/new.jpg',
    });
    expect(set.calls[0]!.attrs).toMatchObject({ target: groupId, to: '@s.whatsapp.net', type: 'set' });
    const picture = iqChild(set.calls[0]!);
    expect(picture?.attrs).toEqual({ type: 'image' });
    expect((await sharp(Buffer.from(picture!.content as Uint8Array)).metadata()).format).toBe('jpeg');

    expect(await groups.removePicture(groupId)).toEqual({ jid: groupId, pictureId: null, url: null });
    expect(set.calls[1]).toMatchObject({ attrs: { target: groupId, type: 'set', xmlns: 'w:profile:picture' } });
    expect(set.calls[1]!.content).toBeUndefined();
  });

  it("events: the operation emits nothing itself; WhatsApp's w:gp2 notification of the change becomes the GROUP event", async () => {
    const groupId = nextGroup();
    serveGroupMetadata(server, groupId, groupNode({ id: groupId, subject: 'Renamed' }));
    server.onIq({ xmlns: 'w:g2', to: groupId, child: 'subject' }, {});
    const before = linked.host.events.length;
    await groups.setSubject(groupId, 'Renamed');
    expect(linked.host.events.slice(before).filter((e) => e.type === 'GROUP')).toEqual([]);

    await linked.connection.send({
      tag: 'notification',
      attrs: { from: groupId, type: 'w:gp2', id: 'gp2-subject-1', participant: ME, t: '1780000600', notify: 'Me' },
      content: [{ tag: 'subject', attrs: { subject: 'Renamed', s_o: ME, s_t: '1780000600' } }],
    });
    const event = await linked.host.next((e) => e.type === 'GROUP' && e.data.id === groupId, before);
    expect(event.data).toMatchObject({ action: 'update', id: groupId, subject: 'Renamed' });
  });
});
