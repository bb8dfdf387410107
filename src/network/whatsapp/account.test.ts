/**
 * The WhatsApp driver's chats, users, labels and calls through Baileys itself: seeded linked
 * accounts (a personal one and a business one) log in to the local WhatsApp stand-in, which answers
 * their queries with recorded replies. Each test checks the node WhatsApp receives (IQ, presence,
 * receipt, call stanza, or the app-state patch decoded with the account's sync key), the port result
 * built from the reply, and how WhatsApp's refusals reach the API.
 */
import {
  addTransactionCapability,
  Curve,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  DEFAULT_CONNECTION_CONFIG,
  initAuthCreds,
  proto,
  unpadRandomMax16,
  type BinaryNode,
  type SignalKeyStore,
  type WAMessage,
} from 'baileys';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../storage/db.js';
import type { ChatOperations, LabelOperations, UserOperations } from '../port.js';
import { CONTACT_LID, CONTACT_PN, GROUP, PARTICIPANT_LID, PARTICIPANT_PN } from './fixtures/baileys-payloads.js';
import { FakeWaServer, iqChild, type IqHook } from './fixtures/fake-wa-server.js';
import { storageWithInstance } from './fixtures/harness.js';
import {
  feed,
  loginSeeded,
  pushedMutations,
  SEEDED_LID,
  SEEDED_PHONE,
  serveAppState,
  type SeededAccount,
} from './fixtures/seeded-account.js';

const ME = `${SEEDED_PHONE}@s.whatsapp.net`;
const page = { offset: 0, limit: 50 };

let server: FakeWaServer;
let storage: Storage;
let personal: SeededAccount;
let business: SeededAccount;
let appState: IqHook;

beforeAll(async () => {
  server = new FakeWaServer();
  const url = await server.start();
  let addInstance: () => Promise<string>;
  let first: string;
  ({ storage, instanceId: first, addInstance } = await storageWithInstance());
  personal = await loginSeeded(server, url, storage, first, 'android');
  business = await loginSeeded(server, url, storage, await addInstance(), 'smba');
});

beforeEach(() => {
  appState = serveAppState(server);
});

afterEach(() => server.clearIqHooks());

afterAll(async () => {
  await personal.driver.stop();
  await business.driver.stop();
  await server.stop();
  await storage.close();
});

function kids(node: BinaryNode | undefined): BinaryNode[] {
  return Array.isArray(node?.content) ? node.content : [];
}

/** A USync query using `protocol` (`contact`, `status`, `lid`). */
function usync(protocol: string) {
  return (iq: BinaryNode) => iq.attrs.xmlns === 'usync' && kids(getBinaryNodeChild(iqChild(iq), 'query')).some((p) => p.tag === protocol);
}

/** WhatsApp's USync answer: one `<user>` per entry with the protocol children given. */
function usyncReply(users: { jid: string; content: BinaryNode[] }[]) {
  return {
    content: [
      {
        tag: 'usync',
        attrs: {},
        content: [{ tag: 'list', attrs: {}, content: users.map((u) => ({ tag: 'user', attrs: { jid: u.jid }, content: u.content })) }],
      },
    ],
  };
}

const onNetwork = (jid: string) => ({ jid, content: [{ tag: 'contact', attrs: { type: 'in' } }] });
const notOnNetwork = (jid: string) => ({ jid, content: [{ tag: 'contact', attrs: { type: 'out' } }] });

const PRIVACY = {
  last: 'contacts',
  online: 'match_last_seen',
  profile: 'all',
  status: 'contacts',
  groupadd: 'contact_blacklist',
  readreceipts: 'all',
  calladd: 'known',
  messages: 'all',
};

function privacyReply(values: Record<string, string>) {
  return {
    content: [
      { tag: 'privacy', attrs: {}, content: Object.entries(values).map(([name, value]) => ({ tag: 'category', attrs: { name, value } })) },
    ],
  };
}

/**
 * The phone's device 0 as WhatsApp's key server and the phone itself see it: a pre-key bundle to
 * answer the client's key fetch with, and the phone's Signal store to decrypt what it receives.
 */
function phoneDevice() {
  const creds = initAuthCreds();
  const preKey = Curve.generateKeyPair();
  const stored = new Map<string, unknown>([['pre-key:7', preKey]]);
  const store: SignalKeyStore = {
    get: async (type, ids) =>
      Object.fromEntries(ids.flatMap((id) => (stored.has(`${type}:${id}`) ? [[id, stored.get(`${type}:${id}`)]] : []))) as never,
    set: async (data) => {
      for (const [type, values] of Object.entries(data))
        for (const [id, value] of Object.entries(values ?? {})) stored.set(`${type}:${id}`, value);
    },
  };
  const logger = pino({ level: 'silent' });
  const repository = DEFAULT_CONNECTION_CONFIG.makeSignalRepository(
    { creds, keys: addTransactionCapability(store, logger, { maxCommitRetries: 1, delayBetweenTriesMs: 1 }) },
    logger,
  );
  const uint = (value: number, bytes: number) =>
    Buffer.from(Array.from({ length: bytes }, (_, i) => (value >> (8 * (bytes - 1 - i))) & 0xff));
  return {
    bundleReply(iq: BinaryNode) {
      const users = kids(iqChild(iq)).map((user) => ({
        tag: 'user',
        attrs: { jid: user.attrs.jid ?? '' },
        content: [
          { tag: 'registration', attrs: {}, content: uint(creds.registrationId, 4) },
          { tag: 'type', attrs: {}, content: Buffer.from([5]) },
          { tag: 'identity', attrs: {}, content: Buffer.from(creds.signedIdentityKey.public) },
          {
            tag: 'skey',
            attrs: {},
            content: [
              { tag: 'id', attrs: {}, content: uint(creds.signedPreKey.keyId, 3) },
              { tag: 'value', attrs: {}, content: Buffer.from(creds.signedPreKey.keyPair.public) },
              { tag: 'signature', attrs: {}, content: Buffer.from(creds.signedPreKey.signature) },
            ],
          },
          {
            tag: 'key',
            attrs: {},
            content: [
              { tag: 'id', attrs: {}, content: uint(7, 3) },
              { tag: 'value', attrs: {}, content: Buffer.from(preKey.public) },
            ],
          },
        ],
      }));
      return { content: [{ tag: 'list', attrs: {}, content: users }] };
    },
    /** Decrypts the peer message as the phone would, from whichever address of this device sent it. */
    async decrypt(node: BinaryNode): Promise<proto.IMessage> {
      const enc = getBinaryNodeChild(node, 'enc');
      const ciphertext = enc?.content as Uint8Array;
      expect(enc?.attrs.type).toBe('pkmsg');
      for (const jid of [`${SEEDED_PHONE}:7@s.whatsapp.net`, `${SEEDED_LID}:7@lid`]) {
        try {
          const plain = await repository.decryptMessage({ jid, type: 'pkmsg', ciphertext });
          return proto.Message.decode(unpadRandomMax16(plain));
        } catch {
          // try the other address
        }
      }
      throw new Error('the phone could not decrypt the peer message');
    },
  };
}

function received(fields: Record<string, unknown>): WAMessage {
  return proto.WebMessageInfo.fromObject(fields) as WAMessage;
}

describe('whatsapp users', () => {
  let users: UserOperations;
  beforeAll(() => {
    users = personal.session.users!;
  });

  it('privacy reads WhatsApp privacy categories; changes go one <category> at a time, then are read back', async () => {
    const get = server.onIq({ xmlns: 'privacy', type: 'get' }, privacyReply(PRIVACY));
    expect(await users.privacy()).toEqual({
      lastSeen: 'contacts',
      online: 'match_last_seen',
      profilePicture: 'all',
      about: 'contacts',
      groupAdd: 'contact_blacklist',
      readReceipts: 'all',
      calls: 'known',
    });
    expect(get.calls[0]).toMatchObject({ attrs: { xmlns: 'privacy', type: 'get', to: '@s.whatsapp.net' }, content: [{ tag: 'privacy' }] });

    const set = server.onIq({ xmlns: 'privacy', type: 'set' }, { content: [] });
    server.onIq({ xmlns: 'privacy', type: 'get' }, privacyReply({ ...PRIVACY, last: 'none', readreceipts: 'none' }));
    const after = await users.setPrivacy({ lastSeen: 'none', readReceipts: 'none' });
    expect(set.calls.map((iq) => getBinaryNodeChild(iqChild(iq), 'category')?.attrs)).toEqual([
      { name: 'last', value: 'none' },
      { name: 'readreceipts', value: 'none' },
    ]);
    expect(after).toMatchObject({ lastSeen: 'none', readReceipts: 'none', calls: 'known' });
  });

  it('maps a refused privacy change (400) and a category WhatsApp did not send', async () => {
    server.onIq({ xmlns: 'privacy', type: 'set' }, { error: { code: 400, text: 'bad-request' } });
    await expect(users.setPrivacy({ calls: 'known' })).rejects.toMatchObject({ status: 400, code: 'bad_request' });
    server.onIq({ xmlns: 'privacy', type: 'get' }, privacyReply({ last: 'all' }));
    await expect(users.privacy()).rejects.toMatchObject({ status: 502, message: expect.stringContaining('online') });
  });

  it('info: number check, about (USync status), picture, business profile and block state', async () => {
    const check = server.onIq(usync('contact'), usyncReply([onNetwork(CONTACT_PN)]));
    const status = server.onIq(
      usync('status'),
      usyncReply([{ jid: CONTACT_PN, content: [{ tag: 'status', attrs: { t: '1780000000' }, content: Buffer.from('Padaria aberta') }] }]),
    );
    const picture = server.onIq(
      { xmlns: 'w:profile:picture', type: 'get' },
      { content: [{ tag: 'picture', attrs: { id: '1780', type: 'image', url: 'https://pps.whatsapp.net/v/t61/maria.jpg' } }] },
    );
    server.onIq(
      { xmlns: 'w:biz' },
      {
        content: [
          {
            tag: 'business_profile',
            attrs: { v: '244' },
            content: [
              {
                tag: 'profile',
                attrs: { jid: CONTACT_PN },
                content: [
                  { tag: 'description', attrs: {}, content: Buffer.from('Pães e bolos') },
                  { tag: 'website', attrs: {}, content: Buffer.from('https://padaria.example') },
                  { tag: 'email', attrs: {}, content: Buffer.from('oi@padaria.example') },
                  { tag: 'categories', attrs: {}, content: [{ tag: 'category', attrs: { id: '1' }, content: Buffer.from('Bakery') }] },
                  { tag: 'address', attrs: {}, content: Buffer.from('Rua 1, São Paulo') },
                ],
              },
            ],
          },
        ],
      },
    );
    server.onIq(
      { xmlns: 'blocklist', type: 'get' },
      { content: [{ tag: 'list', attrs: {}, content: [{ tag: 'item', attrs: { jid: CONTACT_PN } }] }] },
    );

    const info = await users.info('5511988887777');

    expect(kids(getBinaryNodeChild(getBinaryNodeChild(iqChild(check.calls[0]!), 'list'), 'user'))).toEqual([
      { tag: 'contact', attrs: {}, content: Buffer.from('+5511988887777') },
    ]);
    expect(getBinaryNodeChild(iqChild(status.calls[0]!), 'list')).toMatchObject({ content: [{ tag: 'user', attrs: { jid: CONTACT_PN } }] });
    expect(picture.calls[0]).toMatchObject({
      attrs: { target: CONTACT_PN, xmlns: 'w:profile:picture' },
      content: [{ tag: 'picture', attrs: { type: 'image', query: 'url' } }],
    });
    expect(info).toEqual({
      jid: CONTACT_PN,
      number: '5511988887777',
      name: null,
      about: 'Padaria aberta',
      aboutTimestamp: 1_780_000_000,
      pictureUrl: 'https://pps.whatsapp.net/v/t61/maria.jpg',
      isBusiness: true,
      businessProfile: {
        description: 'Pães e bolos',
        category: 'Bakery',
        email: 'oi@padaria.example',
        website: ['https://padaria.example'],
        address: 'Rua 1, São Paulo',
      },
      blocked: true,
    });
  });

  it('a number without WhatsApp is 404; a hidden (401) or missing (404) picture is no URL; 429 stays 429', async () => {
    server.onIq(usync('contact'), usyncReply([notOnNetwork('5511900000000@s.whatsapp.net')]));
    await expect(users.info('5511900000000')).rejects.toMatchObject({ status: 404, message: 'number 5511900000000 is not on the network' });

    server.onIq(usync('contact'), usyncReply([onNetwork(CONTACT_PN)]));
    server.onIq({ xmlns: 'w:profile:picture' }, { error: { code: 401, text: 'not-authorized' } });
    expect(await users.avatar('5511988887777')).toEqual({ jid: CONTACT_PN, pictureId: null, url: null });
    server.onIq({ xmlns: 'w:profile:picture' }, { error: { code: 404, text: 'item-not-found' } });
    expect((await users.avatar('5511988887777')).url).toBeNull();

    server.onIq(usync('contact'), { error: { code: 429, text: 'rate-overlimit' } });
    await expect(users.avatar('5511988887777')).rejects.toMatchObject({ status: 429 });
  });

  it('block resolves the LID by USync and sends <item action=block jid=LID pn_jid=PN>; unblock and the block list', async () => {
    const lid = server.onIq(
      usync('lid'),
      usyncReply([{ jid: PARTICIPANT_PN, content: [{ tag: 'lid', attrs: { val: PARTICIPANT_LID } }] }]),
    );
    const set = server.onIq({ xmlns: 'blocklist', type: 'set' }, { content: [] });
    const events = personal.host.events.length;

    await users.block('5511977776666');
    await users.unblock('5511977776666');

    expect(lid.calls).toHaveLength(1);
    expect(set.calls.map((iq) => iqChild(iq)?.attrs)).toEqual([
      { action: 'block', jid: PARTICIPANT_LID, pn_jid: PARTICIPANT_PN },
      { action: 'unblock', jid: PARTICIPANT_LID },
    ]);
    expect(
      personal.host.events
        .slice(events)
        .filter((e) => e.type === 'CONTACT')
        .map((e) => e.data),
    ).toEqual([
      { id: PARTICIPANT_PN, action: 'block' },
      { id: PARTICIPANT_PN, action: 'unblock' },
    ]);
    await expect(users.block(SEEDED_PHONE)).rejects.toMatchObject({ status: 400 });

    // The block list as WhatsApp lists it (LIDs): shown by phone once the mapping is known.
    server.onIq(
      { xmlns: 'blocklist', type: 'get' },
      {
        content: [
          {
            tag: 'list',
            attrs: {},
            content: [
              { tag: 'item', attrs: { jid: PARTICIPANT_LID } },
              { tag: 'item', attrs: { jid: CONTACT_PN } },
            ],
          },
        ],
      },
    );
    await feed(personal, { 'lid-mapping.update': { lid: PARTICIPANT_LID, pn: PARTICIPANT_PN } });
    expect(await users.blocklist(page)).toEqual({
      items: [
        { jid: PARTICIPANT_PN, number: '5511977776666' },
        { jid: CONTACT_PN, number: '5511988887777' },
      ],
      total: 2,
    });
  });

  it('resolves LIDs and numbers: learnt pairs from memory, an unknown number by a USync lid query, an unknown LID stays null', async () => {
    const learntLid = '200000000000066@lid';
    const learntPn = '5511955554444@s.whatsapp.net';
    await feed(personal, { 'lid-mapping.update': { lid: learntLid, pn: learntPn } });
    const lidQuery = server.onIq(
      usync('lid'),
      usyncReply([{ jid: '5511966665555@s.whatsapp.net', content: [{ tag: 'lid', attrs: { val: '200000000000055@lid' } }] }]),
    );

    expect(await users.resolveAddresses([learntLid, '5511966665555', '300000000000099@lid'])).toEqual([
      { id: learntLid, jid: learntPn, number: '5511955554444', lid: learntLid },
      { id: '5511966665555', jid: '5511966665555@s.whatsapp.net', number: '5511966665555', lid: '200000000000055@lid' },
      { id: '300000000000099@lid', jid: null, number: null, lid: '300000000000099@lid' },
    ]);
    expect(lidQuery.calls).toHaveLength(1);
    // Learnt pairs are kept: asking again (either way) needs no query.
    expect(await users.resolveAddresses(['200000000000055@lid', '5511966665555:2@s.whatsapp.net'])).toEqual([
      { id: '200000000000055@lid', jid: '5511966665555@s.whatsapp.net', number: '5511966665555', lid: '200000000000055@lid' },
      { id: '5511966665555:2@s.whatsapp.net', jid: '5511966665555@s.whatsapp.net', number: '5511966665555', lid: '200000000000055@lid' },
    ]);
    expect(lidQuery.calls).toHaveLength(1);
    await expect(users.resolveAddresses(['123@g.us'])).rejects.toMatchObject({ status: 400 });
  });

  it('own profile: name as an app-state push-name patch, about as a status IQ, picture as a w:profile:picture set', async () => {
    server.onIq(
      usync('status'),
      usyncReply([{ jid: ME, content: [{ tag: 'status', attrs: { t: '1780000000' }, content: Buffer.from('Aberto 9-18') }] }]),
    );
    const about = server.onIq({ xmlns: 'status', type: 'set' }, { content: [] });
    const picture = server.onIq({ xmlns: 'w:profile:picture', type: 'set' }, { content: [] });

    const named = await users.setName('Padaria Central');
    const mutations = await pushedMutations(appState.calls);
    expect(mutations).toEqual([
      {
        collection: 'critical_block',
        index: ['setting_pushName'],
        value: expect.objectContaining({ pushNameSetting: { name: 'Padaria Central' } }),
      },
    ]);
    expect(named).toMatchObject({
      jid: ME,
      number: SEEDED_PHONE,
      name: 'Padaria Central',
      about: 'Aberto 9-18',
      isBusiness: false,
      businessProfile: null,
    });

    await users.setAbout('Aberto 9-18');
    expect(iqChild(about.calls[0]!)).toEqual({ tag: 'status', attrs: {}, content: Buffer.from('Aberto 9-18') });

    const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#c0ffee' } })
      .png()
      .toBuffer();
    await users.setPicture({ data: png, mimetype: 'image/png' });
    const sent = iqChild(picture.calls[0]!);
    expect(picture.calls[0]!.attrs.target).toBeUndefined();
    expect(sent?.attrs).toEqual({ type: 'image' });
    expect((await sharp(sent?.content as Buffer).metadata()).format).toBe('jpeg');
    await users.removePicture();
    expect(picture.calls[1]!.content).toBeUndefined();
  });

  it('presence: subscribe sends <presence type=subscribe>, own presence <presence name type>', async () => {
    server.onIq(usync('contact'), usyncReply([onNetwork(CONTACT_PN)]));
    expect(await users.subscribePresence('5511988887777')).toBeNull();
    await personal.connection.waitForNode((n) => n.tag === 'presence' && n.attrs.type === 'subscribe' && n.attrs.to === CONTACT_PN);
    await users.setPresence('available');
    const own = await personal.connection.waitForNode((n) => n.tag === 'presence' && n.attrs.type === 'available');
    expect(own.attrs.name).toBe('Padaria Central');
  });
});

describe('whatsapp chats', () => {
  const MARIA = CONTACT_PN;
  const JOAO = PARTICIPANT_PN;
  const TEAM = '120363000000000003@g.us';
  let chats: ChatOperations;

  beforeAll(async () => {
    chats = personal.session.chats!;
    await feed(personal, {
      'messaging-history.set': {
        chats: [
          { id: MARIA, unreadCount: 2, conversationTimestamp: 1_780_000_020 },
          { id: JOAO, conversationTimestamp: 1_780_000_030 },
          { id: GROUP, name: 'Equipe', conversationTimestamp: 1_780_000_040, pinned: 1_780_000_040 },
          { id: '5511911110001@s.whatsapp.net', pinned: 1_780_000_001, conversationTimestamp: 1 },
          { id: '5511911110002@s.whatsapp.net', pinned: 1_780_000_002, conversationTimestamp: 2 },
          { id: '5511911110003@s.whatsapp.net', archived: true, conversationTimestamp: 3 },
          { id: TEAM, name: 'Time', unreadCount: 1, conversationTimestamp: 1_780_000_050 },
        ],
        contacts: [],
        messages: [
          received({ key: { remoteJid: MARIA, fromMe: true, id: 'M0' }, messageTimestamp: 1_780_000_000, message: { conversation: 'oi' } }),
          received({
            key: { remoteJid: MARIA, fromMe: false, id: 'M1' },
            messageTimestamp: 1_780_000_010,
            message: { conversation: 'tudo bem?' },
          }),
          received({
            key: { remoteJid: MARIA, fromMe: false, id: 'M2' },
            messageTimestamp: 1_780_000_020,
            message: { conversation: 'e aí' },
          }),
          received({
            key: { remoteJid: TEAM, fromMe: false, id: 'G1', participant: CONTACT_PN },
            messageTimestamp: 1_780_000_050,
            message: { conversation: 'reunião às 10' },
          }),
        ],
        isLatest: true,
        progress: 100,
        syncType: proto.HistorySync.HistorySyncType.RECENT,
      },
    });
  });

  it('pins with a pin_v1 patch (regular_low); the fourth pin, an archived chat and an unknown chat are refused', async () => {
    await expect(chats.setPinned(JOAO, true)).rejects.toMatchObject({ status: 409, message: expect.stringContaining('at most 3') });
    await expect(chats.setPinned('5511911110003@s.whatsapp.net', true)).rejects.toMatchObject({
      status: 409,
      message: expect.stringContaining('archived'),
    });
    await expect(chats.setPinned('5511900000009@s.whatsapp.net', true)).rejects.toMatchObject({ status: 404 });
    expect(appState.calls).toHaveLength(0);

    const unpinned = await chats.setPinned('5511911110001@s.whatsapp.net', false);
    expect(unpinned.pinned).toBe(false);
    const pinned = await chats.setPinned(JOAO, true);
    expect(pinned).toMatchObject({ chatId: JOAO, pinned: true });
    expect(await pushedMutations(appState.calls)).toEqual([
      {
        collection: 'regular_low',
        index: ['pin_v1', '5511911110001@s.whatsapp.net'],
        value: expect.objectContaining({ pinAction: { pinned: false } }),
      },
      { collection: 'regular_low', index: ['pin_v1', JOAO], value: expect.objectContaining({ pinAction: { pinned: true } }) },
    ]);
    // Baileys first brings the collection up to date, then pushes the patch on top of that version.
    expect(appState.calls[0]).toMatchObject({
      attrs: { xmlns: 'w:sync:app:state', type: 'set' },
      content: [{ tag: 'sync', content: [{ tag: 'collection', attrs: { name: 'regular_low', return_snapshot: 'true' } }] }],
    });
  });

  it('mutes until a time (muteEndTimestamp in ms), for ever (-1), and unmutes', async () => {
    const until = Math.floor(Date.now() / 1000) + 3600;
    expect(await chats.mute(MARIA, until)).toMatchObject({ muted: true, mutedUntil: until });
    expect(await chats.mute(MARIA, null)).toMatchObject({ muted: true, mutedUntil: null });
    expect(await chats.unmute(MARIA)).toMatchObject({ muted: false, mutedUntil: null });
    await expect(chats.mute(MARIA, 1000)).rejects.toMatchObject({ status: 400 });
    const values = (await pushedMutations(appState.calls)).map((m) => [m.collection, m.index, m.value.muteAction]);
    expect(values).toEqual([
      ['regular_high', ['mute', MARIA], { muted: true, muteEndTimestamp: until * 1000 }],
      ['regular_high', ['mute', MARIA], { muted: true, muteEndTimestamp: -1 }],
      ['regular_high', ['mute', MARIA], { muted: false }],
    ]);
  });

  it('mark read: read receipts for the unread messages, then a markChatAsRead patch up to the last message', async () => {
    server.onIq({ xmlns: 'privacy', type: 'get' }, privacyReply(PRIVACY));
    await personal.session.users!.privacy();
    const before = personal.connection.received.length;

    const read = await chats.markRead(MARIA);

    expect(read).toMatchObject({ unreadCount: 0, markedUnread: false });
    const receipt = personal.connection.received.slice(before).find((n) => n.tag === 'receipt');
    expect(receipt?.attrs).toMatchObject({ id: 'M2', to: MARIA, type: 'read' });
    expect(getBinaryNodeChildren(getBinaryNodeChild(receipt, 'list'), 'item').map((i) => i.attrs.id)).toEqual(['M1']);
    const [patch] = await pushedMutations(appState.calls);
    expect(patch).toMatchObject({ collection: 'regular_low', index: ['markChatAsRead', MARIA] });
    expect(patch?.value.markChatAsReadAction).toMatchObject({
      read: true,
      messageRange: {
        lastMessageTimestamp: 1_780_000_020,
        messages: [{ key: { remoteJid: MARIA, fromMe: false, id: 'M2' }, timestamp: 1_780_000_020 }],
      },
    });

    expect(await chats.markUnread(MARIA)).toMatchObject({ markedUnread: true });
    expect((await pushedMutations(appState.calls))[1]?.value.markChatAsReadAction?.read).toBe(false);
  });

  it('mark read in a group: the receipt names the author of the unread message', async () => {
    const before = personal.connection.received.length;
    expect(await chats.markRead(TEAM)).toMatchObject({ chatId: TEAM, kind: 'group', name: 'Time', unreadCount: 0 });
    const receipt = personal.connection.received.slice(before).find((n) => n.tag === 'receipt');
    expect(receipt?.attrs).toMatchObject({ id: 'G1', to: TEAM, participant: CONTACT_PN, type: 'read' });
    const [patch] = await pushedMutations(appState.calls);
    expect(patch?.value.markChatAsReadAction?.messageRange?.messages).toEqual([
      { key: { remoteJid: TEAM, fromMe: false, id: 'G1', participant: CONTACT_PN }, timestamp: 1_780_000_050 },
    ]);
  });

  it('archive (regular_low, unpins), clear (clearChat) and delete (deleteChat) patches; history follows', async () => {
    expect(await chats.setArchived(GROUP, true)).toMatchObject({ archived: true, pinned: false });
    expect((await chats.history(MARIA, page)).total).toBe(3);
    expect(await chats.clear(MARIA)).toMatchObject({ chatId: MARIA, lastMessage: null });
    expect(await chats.history(MARIA, page)).toEqual({ items: [], total: 0 });
    // The list reads a cleared chat's last message in its own statement: none since the clear.
    expect((await chats.list({}, page)).items.find((c) => c.chatId === MARIA)).toMatchObject({ lastMessage: null });
    await chats.delete(JOAO);
    await expect(chats.get(JOAO)).rejects.toMatchObject({ status: 404 });
    expect((await pushedMutations(appState.calls)).map((m) => [m.collection, m.index])).toEqual([
      ['regular_low', ['archive', GROUP]],
      ['regular_high', ['clearChat', MARIA, '1', '0']],
      ['regular_high', ['deleteChat', JOAO, '1']],
    ]);
  });

  it('checks numbers with one USync contact query', async () => {
    const hook = server.onIq(usync('contact'), usyncReply([onNetwork(CONTACT_PN), notOnNetwork('5511900000000@s.whatsapp.net')]));
    expect(await chats.checkNumbers(['5511988887777', '5511900000000'])).toEqual([
      { number: '5511988887777', jid: CONTACT_PN, exists: true },
      { number: '5511900000000', jid: '5511900000000@s.whatsapp.net', exists: false },
    ]);
    expect(getBinaryNodeChildren(getBinaryNodeChild(iqChild(hook.calls[0]!), 'list'), 'user').map((u) => kids(u)[0]?.content)).toEqual([
      Buffer.from('+5511988887777'),
      Buffer.from('+5511900000000'),
    ]);
  });

  it('a history request needs a stored message to start from', async () => {
    await expect(chats.requestHistory(GROUP, 50)).rejects.toMatchObject({ status: 409, message: expect.stringContaining('no message') });
  });

  it('a history request is an encrypted peer message to the phone asking for messages before the oldest stored one', async () => {
    const phone = phoneDevice();
    const keys = server.onIq({ xmlns: 'encrypt', child: 'key' }, (iq) => phone.bundleReply(iq));
    const before = personal.connection.received.length;

    expect(await chats.requestHistory(MARIA, 50)).toEqual({ requested: 50 });

    expect(keys.calls).toHaveLength(1);
    const sent = await personal.connection.waitForNode(
      (n) => personal.connection.received.indexOf(n) >= before && n.tag === 'message' && n.attrs.category === 'peer',
    );
    expect(sent.attrs).toMatchObject({ push_priority: 'high_force' });
    expect(getBinaryNodeChild(sent, 'meta')?.attrs).toEqual({ appdata: 'default' });
    // What reaches the phone: a message to this account's own devices carrying the request.
    const { deviceSentMessage } = await phone.decrypt(sent);
    expect(deviceSentMessage?.destinationJid).toBe(ME);
    const request = deviceSentMessage?.message?.protocolMessage;
    expect(request?.type).toBe(proto.Message.ProtocolMessage.Type.PEER_DATA_OPERATION_REQUEST_MESSAGE);
    const pdo = request?.peerDataOperationRequestMessage;
    expect(pdo?.peerDataOperationRequestType).toBe(proto.Message.PeerDataOperationRequestType.HISTORY_SYNC_ON_DEMAND);
    expect(pdo?.historySyncOnDemandRequest).toMatchObject({
      chatJid: MARIA,
      oldestMsgId: 'M0',
      oldestMsgFromMe: true,
      onDemandMsgCount: 50,
    });
    expect(Number(pdo?.historySyncOnDemandRequest?.oldestMsgTimestampMs)).toBe(1_780_000_000_000);
  });
});

describe('whatsapp labels', () => {
  it('a personal account has no labels (403, as the sandbox)', async () => {
    const labels = personal.session.labels!;
    await expect(labels.list(page)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    await expect(labels.create('VIP', 1)).rejects.toMatchObject({ status: 403 });
    expect(appState.calls).toHaveLength(0);
  });

  it('a business account creates, edits, applies (chat and message), removes and deletes labels with app-state patches', async () => {
    const labels: LabelOperations = business.session.labels!;
    await feed(business, {
      'labels.edit': { id: '3', name: 'Novo pedido', color: 1, deleted: false },
      'messaging-history.set': {
        chats: [{ id: CONTACT_PN, conversationTimestamp: 1_780_000_000 }],
        contacts: [],
        messages: [
          received({
            key: { remoteJid: CONTACT_PN, fromMe: false, id: 'LBLMSG1' },
            messageTimestamp: 1_780_000_000,
            message: { conversation: 'pedido 12' },
          }),
        ],
        isLatest: true,
      },
    });
    expect(await labels.list(page)).toEqual({ items: [{ labelId: '3', name: 'Novo pedido', color: 1 }], total: 1 });
    await expect(labels.create('novo PEDIDO', 2)).rejects.toMatchObject({ status: 409 });

    expect(await labels.create('VIP', 5)).toEqual({ labelId: '4', name: 'VIP', color: 5 });
    expect(await labels.edit('4', { color: 7 })).toEqual({ labelId: '4', name: 'VIP', color: 7 });
    expect(await labels.apply('4', { chatId: CONTACT_PN })).toEqual(['4']);
    expect(await labels.apply('3', { chatId: CONTACT_PN, messageId: 'LBLMSG1' })).toEqual(['3']);
    expect((await business.session.chats!.get(CONTACT_PN)).labels).toEqual(['4']);
    expect((await business.session.chats!.history(CONTACT_PN, page)).items[0]?.labels).toEqual(['3']);
    expect(await labels.remove('4', { chatId: CONTACT_PN })).toEqual([]);
    await labels.delete('3');
    await expect(labels.apply('9', { chatId: CONTACT_PN })).rejects.toMatchObject({ status: 404 });
    await expect(labels.apply('4', { chatId: CONTACT_PN, messageId: 'NOPE' })).rejects.toMatchObject({ status: 404 });
    expect(await labels.list(page)).toEqual({ items: [{ labelId: '4', name: 'VIP', color: 7 }], total: 1 });

    expect(
      (await pushedMutations(appState.calls)).map((m) => [m.index, m.value.labelEditAction ?? m.value.labelAssociationAction]),
    ).toEqual([
      [['label_edit', '4'], expect.objectContaining({ name: 'VIP', color: 5, deleted: false })],
      [['label_edit', '4'], expect.objectContaining({ name: 'VIP', color: 7, deleted: false })],
      [['label_jid', '4', CONTACT_PN], { labeled: true }],
      [['label_message', '3', CONTACT_PN, 'LBLMSG1', '0', '0'], { labeled: true }],
      [['label_jid', '4', CONTACT_PN], { labeled: false }],
      [['label_edit', '3'], expect.objectContaining({ name: 'Novo pedido', color: 1, deleted: true })],
    ]);
  });
});

describe('whatsapp calls', () => {
  /** WhatsApp offering a call from a LID-addressed caller with the phone number beside it. */
  async function offer(callId: string): Promise<void> {
    const seen = personal.host.next((e) => e.type === 'CALL' && e.data.id === callId && e.data.status === 'offer');
    await personal.connection.send({
      tag: 'call',
      attrs: { from: CONTACT_LID, id: `srv-${callId}`, t: '1780001000' },
      content: [
        {
          tag: 'offer',
          attrs: { 'call-id': callId, 'call-creator': CONTACT_LID, caller_pn: CONTACT_PN },
          content: [{ tag: 'video', attrs: { enc: 'vp8' } }],
        },
      ],
    });
    await seen;
  }

  /** Rejects and answers the reject stanza as WhatsApp does (an ack), returning what was sent. */
  async function reject(callId: string, automatic = false) {
    const rejecting = personal.session.calls!.reject(callId, automatic ? { automatic } : {});
    const stanza = await personal.connection.waitForNode(
      (n) => n.tag === 'call' && getBinaryNodeChild(n, 'reject')?.attrs['call-id'] === callId,
    );
    await personal.connection.send({ tag: 'ack', attrs: { id: stanza.attrs.id ?? '', class: 'call', from: CONTACT_LID } });
    return { record: await rejecting, stanza };
  }

  it('an offer is in the call log (ringing, caller by phone); reject sends <call><reject/></call> to the caller', async () => {
    await offer('CALLW1');
    expect((await personal.session.calls!.history(page)).items[0]).toEqual({
      callId: 'CALLW1',
      from: CONTACT_PN,
      direction: 'incoming',
      isVideo: true,
      isGroup: false,
      status: 'ringing',
      rejectedBy: null,
      offeredAt: 1_780_001_000,
      endedAt: null,
    });

    const events = personal.host.events.length;
    const { record, stanza } = await reject('CALLW1');
    expect(stanza.attrs).toMatchObject({ from: `${SEEDED_PHONE}:7@s.whatsapp.net`, to: CONTACT_LID });
    expect(getBinaryNodeChild(stanza, 'reject')?.attrs).toEqual({ 'call-id': 'CALLW1', 'call-creator': CONTACT_LID, count: '0' });
    expect(record).toMatchObject({ callId: 'CALLW1', status: 'rejected', rejectedBy: 'user' });
    expect(personal.host.events.slice(events).find((e) => e.type === 'CALL')?.data).toMatchObject({
      id: 'CALLW1',
      from: CONTACT_PN,
      status: 'reject',
      isVideo: true,
    });
    await expect(personal.session.calls!.reject('CALLW1')).rejects.toMatchObject({ status: 409 });
    await expect(personal.session.calls!.reject('NOCALL')).rejects.toMatchObject({ status: 404 });
  });

  it('an automatic rejection is recorded as such', async () => {
    await offer('CALLW2');
    const { record } = await reject('CALLW2', true);
    expect(record).toMatchObject({ status: 'rejected', rejectedBy: 'auto' });
    expect((await personal.session.calls!.history(page)).items.map((c) => [c.callId, c.rejectedBy])).toEqual([
      ['CALLW2', 'auto'],
      ['CALLW1', 'user'],
    ]);
  });
});
