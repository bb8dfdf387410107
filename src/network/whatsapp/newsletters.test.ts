/**
 * The WhatsApp driver's NewsletterOperations through Baileys itself, against recorded replies served
 * by the local WhatsApp stand-in: GraphQL (`w:mex`) queries with their JSON variables, the
 * `newsletter` message queries, posts acknowledged with a server id, and the refusals.
 */
import { QueryIds, type BinaryNode } from 'baileys';
import { beforeAll, describe, expect, it } from 'vitest';
import type { NewsletterOperations } from '../port.js';
import { messageUpdatesNode, mexResult, NEWSLETTER, rawNewsletter } from './fixtures/baileys-payloads.js';
import { iqChild, type FakeConnection, type FakeWaServer } from './fixtures/fake-wa-server.js';
import { linkedRig, type Linked } from './fixtures/linked-session.js';

const rig = linkedRig();
let server: FakeWaServer;
let linked: Linked;
let newsletters: NewsletterOperations;

beforeAll(() => {
  ({ server, linked } = rig);
  newsletters = linked.session.newsletters!;
});

/** Answers the GraphQL query `queryId` with `{ data: { [path]: value } }` (or the given body). */
function serveMex(queryId: string, body: Record<string, unknown>) {
  return server.onIq((iq) => iq.attrs.xmlns === 'w:mex' && iqChild(iq)?.attrs.query_id === queryId, { content: [mexResult(body)] });
}

/** The JSON variables of a recorded GraphQL query. */
function variables(iq: BinaryNode | undefined): unknown {
  const content = iq ? iqChild(iq)?.content : undefined;
  return (JSON.parse(Buffer.from(content as Uint8Array).toString('utf-8')) as { variables: unknown }).variables;
}

const INFO = {
  newsletterId: NEWSLETTER,
  name: 'Our channel',
  description: 'News about us',
  inviteCode: '0029VaTest123',
  inviteLink: 'https://whatsapp.com/channel/0029VaTest123',
  pictureUrl: 'https://mmg.whatsapp.net/v/t61.24694-24/pic.jpg',
  role: 'owner',
  muted: false,
  followers: 1234,
  verified: false,
  creation: 1_780_000_000,
};

describe('whatsapp newsletters', () => {
  it('info by id and by invite code: the metadata query (w:mex) and its answer mapped', async () => {
    const hook = serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter() } });
    expect(await newsletters.info({ newsletterId: NEWSLETTER })).toEqual(INFO);
    expect(hook.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'w:mex', to: '@s.whatsapp.net' },
      content: [{ tag: 'query', attrs: { query_id: QueryIds.METADATA } }],
    });
    expect(variables(hook.calls[0])).toEqual({
      fetch_creation_time: true,
      fetch_full_image: true,
      fetch_viewer_metadata: true,
      input: { key: NEWSLETTER, type: 'JID' },
    });

    await newsletters.info({ inviteCode: '0029VaTest123' });
    expect(variables(hook.calls[1])).toMatchObject({ input: { key: '0029VaTest123', type: 'INVITE' } });
  });

  it('refusals: a GraphQL error with code 404 is not found; an iq error 403 is forbidden; 429 is rate-limited', async () => {
    const notFound = serveMex(QueryIds.METADATA, { errors: [{ message: 'Newsletter not found', extensions: { error_code: 404 } }] });
    await expect(newsletters.info({ newsletterId: NEWSLETTER })).rejects.toMatchObject({ status: 404, code: 'not_found' });
    notFound.remove();
    const forbidden = server.onIq({ xmlns: 'w:mex' }, { error: { code: 403, text: 'forbidden' } });
    await expect(newsletters.follow(NEWSLETTER)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    forbidden.remove();
    server.onIq({ xmlns: 'w:mex' }, { error: { code: 429, text: 'rate-overlimit' } });
    await expect(newsletters.info({ newsletterId: NEWSLETTER })).rejects.toMatchObject({ status: 429 });
  });

  it('create sends the create query with name and description, then reads the channel (a new channel has no picture)', async () => {
    const create = serveMex(QueryIds.CREATE, { data: { xwa2_newsletter_create: rawNewsletter({ picture: false }) } });
    serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter({ picture: false }) } });
    const info = await newsletters.create({ name: 'Our channel', description: 'News about us' });
    expect(variables(create.calls[0])).toEqual({ input: { name: 'Our channel', description: 'News about us' } });
    expect(info).toEqual({ ...INFO, pictureUrl: null });
  });

  it('follow, unfollow, mute and unmute send their own queries with the newsletter id and answer fresh metadata', async () => {
    const metadata = serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter({ role: 'SUBSCRIBER', mute: 'ON' }) } });
    const follow = serveMex(QueryIds.FOLLOW, { data: { xwa2_newsletter_join_v2: { id: NEWSLETTER } } });
    const unfollow = serveMex(QueryIds.UNFOLLOW, { data: { xwa2_newsletter_leave_v2: { id: NEWSLETTER } } });
    const mute = serveMex(QueryIds.MUTE, { data: { xwa2_newsletter_mute_v2: { id: NEWSLETTER } } });
    const unmute = serveMex(QueryIds.UNMUTE, { data: { xwa2_newsletter_unmute_v2: { id: NEWSLETTER } } });

    expect(await newsletters.follow(NEWSLETTER)).toMatchObject({ role: 'subscriber', muted: true });
    await newsletters.unfollow(NEWSLETTER);
    await newsletters.setMuted(NEWSLETTER, true);
    await newsletters.setMuted(NEWSLETTER, false);
    for (const hook of [follow, unfollow, mute, unmute]) expect(variables(hook.calls[0])).toEqual({ newsletter_id: NEWSLETTER });
    expect(metadata.calls).toHaveLength(4);
  });

  it('update sends one update query with every change; a null picture removes it; delete sends the delete query', async () => {
    serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter({ name: 'Renamed' }) } });
    const update = serveMex(QueryIds.UPDATE_METADATA, { data: { xwa2_newsletter_update: { id: NEWSLETTER } } });
    const info = await newsletters.update(NEWSLETTER, { name: 'Renamed', description: 'New words', picture: null });
    expect(variables(update.calls[0])).toEqual({
      newsletter_id: NEWSLETTER,
      updates: { name: 'Renamed', description: 'New words', picture: '', settings: null },
    });
    expect(info.name).toBe('Renamed');

    const remove = serveMex(QueryIds.DELETE, { data: { xwa2_newsletter_delete_v2: { id: NEWSLETTER } } });
    await newsletters.delete(NEWSLETTER);
    expect(variables(remove.calls[0])).toEqual({ newsletter_id: NEWSLETTER });
  });

  it('messages: <message_updates count> for the newest offset + limit posts, newest first, plaintext decoded', async () => {
    serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter() } });
    const hook = server.onIq(
      { xmlns: 'newsletter', child: 'message_updates' },
      {
        content: [
          messageUpdatesNode([
            { serverId: 101, id: '3EB0POST101', t: 1_780_000_101, text: 'first' },
            { serverId: 103, id: '3EB0POST103', t: 1_780_000_103, text: 'third' },
            { serverId: 102, id: '3EB0POST102', t: 1_780_000_102, text: 'second' },
          ]),
        ],
      },
    );
    const page = await newsletters.messages(NEWSLETTER, { offset: 1, limit: 2 });
    expect(hook.calls[0]).toMatchObject({
      attrs: { type: 'get', xmlns: 'newsletter', to: NEWSLETTER },
      content: [{ tag: 'message_updates', attrs: { count: '3' } }],
    });
    expect(page).toEqual({
      items: [
        {
          key: { remoteJid: NEWSLETTER, fromMe: true, id: '3EB0POST102' },
          serverId: 102,
          message: { conversation: 'second' },
          messageTimestamp: 1_780_000_102,
        },
        {
          key: { remoteJid: NEWSLETTER, fromMe: true, id: '3EB0POST101' },
          serverId: 101,
          message: { conversation: 'first' },
          messageTimestamp: 1_780_000_101,
        },
      ],
      total: 3,
    });
  });

  it('send: the owner posts a plaintext message; the server ack names its server id', async () => {
    serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter() } });
    const ackPosts = (connection: FakeConnection, node: BinaryNode) => {
      if (node.tag !== 'message' || node.attrs.to !== NEWSLETTER) return;
      void connection.send({
        tag: 'ack',
        attrs: { class: 'message', id: node.attrs.id!, from: NEWSLETTER, t: '1780000200', server_id: '104' },
      });
    };
    server.on('node', ackPosts);
    try {
      const sent = await newsletters.send(NEWSLETTER, 'Hello followers');
      expect(sent).toMatchObject({ key: { remoteJid: NEWSLETTER, fromMe: true }, serverId: 104, status: 'SENT' });
      const message = linked.connection.received.find((node) => node.tag === 'message' && node.attrs.id === sent.key.id);
      expect(message?.attrs).toMatchObject({ to: NEWSLETTER, type: 'text' });
      expect(iqChild(message!)?.tag).toBe('plaintext');
    } finally {
      server.off('node', ackPosts);
    }
  });

  it('send is refused to a follower before anything is sent; list is not offered (501)', async () => {
    serveMex(QueryIds.METADATA, { data: { xwa2_newsletter: rawNewsletter({ role: 'SUBSCRIBER' }) } });
    const before = linked.connection.received.length;
    await expect(newsletters.send(NEWSLETTER, 'Hi')).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    expect(linked.connection.received.slice(before).some((node) => node.tag === 'message')).toBe(false);
    await expect(newsletters.list({ offset: 0, limit: 10 })).rejects.toMatchObject({ status: 501, code: 'not_supported' });
  });
});
