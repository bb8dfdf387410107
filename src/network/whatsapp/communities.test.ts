/**
 * The WhatsApp driver's CommunityOperations through Baileys itself, against recorded `w:g2` replies
 * served by the local WhatsApp stand-in: the query WhatsApp receives, the port result, the refusals.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { CommunityOperations } from '../port.js';
import { CONTACT_PN, groupNode, subGroupsNode } from './fixtures/baileys-payloads.js';
import { iqChild, type FakeWaServer } from './fixtures/fake-wa-server.js';
import { linkedRig, type Linked, serveGroupMetadata } from './fixtures/linked-session.js';

const ME = '5511999999999@s.whatsapp.net';

const rig = linkedRig();
let server: FakeWaServer;
let linked: Linked;
let communities: CommunityOperations;
let counter = 0;

beforeAll(() => {
  ({ server, linked } = rig);
  communities = linked.session.communities!;
});

/** Fresh ids per test (the session caches group metadata). */
function ids(): { community: string; announce: string; team: string; other: string } {
  counter += 1;
  const base = `12036311${String(counter).padStart(3, '0')}0000`;
  return { community: `${base}01@g.us`, announce: `${base}02@g.us`, team: `${base}03@g.us`, other: `${base}04@g.us` };
}

/** A community whose parent lists this account with `role`; its announcement group and one linked group. */
function serveCommunity(g: ReturnType<typeof ids>, role: 'superadmin' | 'admin' | null = 'superadmin') {
  const parent = serveGroupMetadata(
    server,
    g.community,
    groupNode({
      id: g.community,
      subject: 'Neighbours',
      description: 'Our street',
      flags: ['parent'],
      participants: [
        { jid: ME, ...(role ? { type: role } : {}) },
        { jid: CONTACT_PN, type: 'admin' },
      ],
    }),
  );
  const subGroups = server.onIq((iq) => iq.attrs.to === g.community && iqChild(iq)?.tag === 'sub_groups', {
    content: [
      subGroupsNode([
        { id: g.team, subject: 'Team' },
        { id: g.announce, subject: 'Neighbours', announce: true, size: 42 },
      ]),
    ],
  });
  return { parent, subGroups };
}

describe('whatsapp communities', () => {
  it('info reads the parent group and its <sub_groups>: announcement group, linked groups, size, role', async () => {
    const g = ids();
    const { parent, subGroups } = serveCommunity(g);
    const info = await communities.info(g.community);
    expect(parent.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'w:g2', to: g.community },
      content: [{ tag: 'query', attrs: { request: 'interactive' } }],
    });
    expect(subGroups.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'w:g2', to: g.community },
      content: [{ tag: 'sub_groups', attrs: {} }],
    });
    expect(info).toEqual({
      communityId: g.community,
      subject: 'Neighbours',
      description: 'Our street',
      owner: ME,
      creation: 1_780_000_000,
      announceGroupId: g.announce,
      groups: [{ groupId: g.team, subject: 'Team' }],
      size: 42,
      role: 'admin',
    });
  });

  it('a plain group is not a community (404); a 403 from WhatsApp is forbidden', async () => {
    const g = ids();
    server.onIq((iq) => iq.attrs.to === g.team, { content: [groupNode({ id: g.team })] });
    await expect(communities.info(g.team)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    server.onIq((iq) => iq.attrs.to === g.other, { error: { code: 403, text: 'forbidden' } });
    await expect(communities.info(g.other)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('create sends <create subject> with <description>, <parent> and the general chat, then reads the new community', async () => {
    const g = ids();
    const create = server.onIq(
      { xmlns: 'w:g2', to: '@g.us', child: 'create' },
      { content: [{ tag: 'group', attrs: { id: g.community.replace('@g.us', '') } }] },
    );
    serveCommunity(g);
    const info = await communities.create('Neighbours', 'Our street');
    const node = iqChild(create.calls[0]!);
    expect(node?.attrs).toEqual({ subject: 'Neighbours' });
    const parts = Array.isArray(node?.content) ? node.content : [];
    expect(parts.map((p) => p.tag)).toEqual(['description', 'parent', 'allow_non_admin_sub_group_creation', 'create_general_chat']);
    expect(Buffer.from((parts[0]?.content as { content: Uint8Array }[])[0]!.content).toString()).toBe('Our street');
    expect(info).toMatchObject({ communityId: g.community, announceGroupId: g.announce, role: 'admin' });
  });

  it('link sends <links><link link_type="sub_group"><group jid/></link></links> to the parent; unlink sends <unlink>; 403 is forbidden', async () => {
    const g = ids();
    serveCommunity(g);
    const link = server.onIq({ xmlns: 'w:g2', to: g.community, child: 'links' }, {});
    await communities.link(g.community, [g.other]);
    expect(iqChild(link.calls[0]!)).toEqual({
      tag: 'links',
      attrs: {},
      content: [{ tag: 'link', attrs: { link_type: 'sub_group' }, content: [{ tag: 'group', attrs: { jid: g.other } }] }],
    });
    expect(link.calls[0]!.attrs).toMatchObject({ type: 'set', xmlns: 'w:g2' });

    const unlink = server.onIq({ xmlns: 'w:g2', to: g.community, child: 'unlink' }, {});
    await communities.unlink(g.community, [g.team]);
    expect(iqChild(unlink.calls[0]!)).toEqual({
      tag: 'unlink',
      attrs: { unlink_type: 'sub_group' },
      content: [{ tag: 'group', attrs: { jid: g.team } }],
    });

    link.remove();
    server.onIq({ xmlns: 'w:g2', to: g.community, child: 'links' }, { error: { code: 403, text: 'forbidden' } });
    await expect(communities.link(g.community, [g.other])).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('groups: the announcement group first; groups this account has not joined come from <sub_groups>', async () => {
    const g = ids();
    serveCommunity(g);
    serveGroupMetadata(
      server,
      g.announce,
      groupNode({
        id: g.announce,
        subject: 'Neighbours',
        flags: ['announcement', 'locked', 'default_sub_group'],
        linkedParent: g.community,
      }),
    );
    server.onIq((iq) => iq.attrs.to === g.team && iqChild(iq)?.tag === 'query', { error: { code: 403, text: 'forbidden' } });
    const page = await communities.groups(g.community, { offset: 0, limit: 10 });
    expect(page.total).toBe(2);
    expect(page.items[0]).toMatchObject({
      groupId: g.announce,
      announce: true,
      locked: true,
      communityId: g.community,
      isCommunityAnnounce: true,
      size: 3,
    });
    expect(page.items[1]).toMatchObject({
      groupId: g.team,
      subject: 'Team',
      participants: [],
      communityId: g.community,
      isCommunityAnnounce: false,
    });
  });

  it('list: the parents among the participating groups, each read in full', async () => {
    const g = ids();
    serveCommunity(g);
    server.onIq(
      { xmlns: 'w:g2', child: 'participating' },
      {
        content: [
          {
            tag: 'groups',
            attrs: {},
            content: [groupNode({ id: g.team }), groupNode({ id: g.community, subject: 'Neighbours', flags: ['parent'] })],
          },
        ],
      },
    );
    const page = await communities.list({ offset: 0, limit: 10 });
    expect(page.total).toBe(1);
    expect(page.items[0]).toMatchObject({
      communityId: g.community,
      announceGroupId: g.announce,
      groups: [{ groupId: g.team, subject: 'Team' }],
    });
  });

  it('announce is refused to a member who is not an admin, before anything is sent', async () => {
    const g = ids();
    serveCommunity(g, null);
    const before = linked.connection.received.filter((node) => node.tag === 'message').length;
    const failure = await communities.announce(g.community, 'Hello').catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 403, code: 'forbidden' });
    expect(linked.connection.received.filter((node) => node.tag === 'message').length).toBe(before);
  });

  it('announce by an admin is a text sent to the announcement group (SEND_MESSAGE through the session)', async () => {
    const g = ids();
    serveCommunity(g);
    serveGroupMetadata(
      server,
      g.announce,
      groupNode({
        id: g.announce,
        flags: ['announcement', 'default_sub_group'],
        linkedParent: g.community,
        addressing: 'pn',
        participants: [{ jid: ME, type: 'superadmin' }],
      }),
    );
    // No other devices to encrypt for: the device list of the participants is empty.
    server.onIq({ xmlns: 'usync' }, { content: [{ tag: 'usync', attrs: {}, content: [{ tag: 'list', attrs: {} }] }] });
    const sent = await communities.announce(g.community, 'Street party on Friday');
    expect(sent).toMatchObject({
      key: { remoteJid: g.announce, fromMe: true },
      message: { extendedTextMessage: { text: 'Street party on Friday' } },
      status: 'SENT',
    });
    const message = await linked.connection.waitForNode((node) => node.tag === 'message' && node.attrs.to === g.announce);
    expect(message.attrs.id).toBe(sent.key.id);
    expect(linked.host.events.some((e) => e.type === 'SEND_MESSAGE' && (e.data.key as { id: string }).id === sent.key.id)).toBe(true);
  });
});
