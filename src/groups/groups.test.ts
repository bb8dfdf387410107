import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../storage/db.js';
import {
  connectedInstance,
  DIALECTS,
  newSchemaName,
  PG_URL,
  recordEvents,
  startGateway,
  uniqueNumber,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { expectError, expectStatus, PNG_BASE64, sandboxAccount, instanceCalls } from '../../test/support/social.js';

describe('/group on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let a: TestInstance;
  let b: TestInstance;
  let c: TestInstance;
  const { get, post } = instanceCalls(() => gw);
  const jid = (who: TestInstance | string) => `${typeof who === 'string' ? who : who.number}@s.whatsapp.net`;
  const newGroup = async (owner: TestInstance, participants: string[], subject = 'Team') =>
    expectStatus(await post(owner, '/group/create', { subject, participants }), 201).group;
  const groupEvents = (who: TestInstance, groupId: string, action?: string) =>
    events.of(who.id, 'GROUP').filter((e) => e.data.id === groupId && (!action || e.data.action === action));

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

  it('creates a group, adding who can be added; participants get GROUP create and see it', async () => {
    const contact = uniqueNumber();
    await sandboxAccount(gw, { number: contact, pushName: 'Virtual' });
    const nobody = uniqueNumber();
    const created = expectStatus(
      await post(a, '/group/create', { subject: 'Launch', description: 'the plan', participants: [b.number, contact, nobody] }),
      201,
    );
    expect(created.results).toEqual([
      { number: b.number, jid: jid(b), status: 'ok' },
      { number: contact, jid: jid(contact), status: 'ok' },
      { number: nobody, jid: jid(nobody), status: 'not_on_network' },
    ]);
    const group = created.group;
    expect(group.groupId).toMatch(/^\d+@g\.us$/);
    expect(group).toMatchObject({
      subject: 'Launch',
      description: 'the plan',
      owner: jid(a),
      size: 3,
      announce: false,
      locked: false,
      joinApproval: false,
      ephemeral: 0,
      memberAddMode: 'admins',
      communityId: null,
      isCommunityAnnounce: false,
    });
    expect(group.participants).toEqual([
      { jid: jid(a), number: a.number, role: 'superadmin' },
      { jid: jid(b), number: b.number, role: 'member' },
      { jid: jid(contact), number: contact, role: 'member' },
    ]);
    for (const who of [a, b]) {
      const event = await events.next(who.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'create');
      expect(event.data).toMatchObject({ author: jid(a), subject: 'Launch', participants: [jid(a), jid(b), jid(contact)] });
    }
    expect(expectStatus(await get(b, `/group/info?groupId=${group.groupId}`), 200)).toEqual(group);
    expect(expectStatus(await get(b, '/group/list'), 200).items.map((g: any) => g.groupId)).toContain(group.groupId);
    // The group chat is in the participants' chat lists.
    expect(expectStatus(await get(b, '/chat/list?kind=group'), 200).items.map((chat: any) => [chat.chatId, chat.name])).toContainEqual([
      group.groupId,
      'Launch',
    ]);

    expectError(await get(c, `/group/info?groupId=${group.groupId}`), 403, /not a participant/);
    expectError(await get(c, '/group/info?groupId=1203630000000000@g.us'), 404, /group .* not found/);
    expectError(await get(c, '/group/info?groupId=nonsense'), 400, /groupId/);
    expectError(await post(a, '/group/create', { subject: '', participants: [] }), 400, /subject/);
  });

  it('lets admins manage participants and refuses members, as the network does', async () => {
    const group = await newGroup(a, [b.number!]);
    expectError(
      await post(b, '/group/participants/add', { groupId: group.groupId, participants: [c.number] }),
      403,
      /only group admins can add participants/,
    );
    expectError(
      await post(b, '/group/participants/promote', { groupId: group.groupId, participants: [b.number] }),
      403,
      /only group admins/,
    );

    const promoted = expectStatus(await post(a, '/group/participants/promote', { groupId: group.groupId, participants: [b.number] }), 200);
    expect(promoted).toEqual({ groupId: group.groupId, results: [{ number: b.number, jid: jid(b), status: 'ok' }] });
    expect((await events.next(b.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'promote')).data).toMatchObject({
      author: jid(a),
      participants: [jid(b)],
    });

    const added = expectStatus(
      await post(b, '/group/participants/add', { groupId: group.groupId, participants: [c.number, a.number] }),
      200,
    );
    expect(added.results.map((r: any) => r.status)).toEqual(['ok', 'already_participant']);
    await events.next(c.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'add');

    const creator = expectStatus(await post(b, '/group/participants/demote', { groupId: group.groupId, participants: [a.number] }), 200);
    expect(creator.results[0].status).toBe('not_allowed');
    const removeCreator = expectStatus(
      await post(b, '/group/participants/remove', { groupId: group.groupId, participants: [a.number, uniqueNumber()] }),
      200,
    );
    expect(removeCreator.results.map((r: any) => r.status)).toEqual(['not_allowed', 'not_participant']);

    expectStatus(await post(a, '/group/participants/remove', { groupId: group.groupId, participants: [c.number] }), 200);
    expect((await events.next(c.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'remove')).data.participants).toEqual([
      jid(c),
    ]);
    expectError(await get(c, `/group/info?groupId=${group.groupId}`), 403, /not a participant/);

    expectStatus(await post(a, '/group/participants/demote', { groupId: group.groupId, participants: [b.number] }), 200);
    const info = expectStatus(await get(a, `/group/info?groupId=${group.groupId}`), 200);
    expect(info.participants.map((p: any) => p.role)).toEqual(['superadmin', 'member']);

    // With memberAddMode "all" any participant adds people.
    expectStatus(await post(a, '/group/settings', { groupId: group.groupId, memberAddMode: 'all' }), 200);
    expect(
      expectStatus(await post(b, '/group/participants/add', { groupId: group.groupId, participants: [c.number] }), 200).results[0].status,
    ).toBe('ok');
    expectError(await post(a, '/group/participants/add', { groupId: group.groupId, participants: [] }), 400, /participants/);
  });

  it('respects the privacy of people who may not be added', async () => {
    const shy = await connectedInstance(gw, uniqueNumber());
    expectStatus(await post(shy, '/user/privacy', { groupAdd: 'contacts' }), 200);
    const group = await newGroup(a, [shy.number!]);
    expect(group.size).toBe(1);
    const again = expectStatus(await post(a, '/group/participants/add', { groupId: group.groupId, participants: [shy.number] }), 200);
    expect(again.results[0].status).toBe('privacy_restricted');
    // Once A is a contact of shy (they have a chat), A may add them.
    expectStatus(await post(shy, '/send/text', { number: a.number, text: 'hi' }), 200);
    expect(
      expectStatus(await post(a, '/group/participants/add', { groupId: group.groupId, participants: [shy.number] }), 200).results[0].status,
    ).toBe('ok');
  });

  it('changes subject, description and picture; a locked group keeps them to admins', async () => {
    const group = await newGroup(a, [b.number!]);
    const renamed = expectStatus(await post(b, '/group/subject', { groupId: group.groupId, subject: 'Renamed by B' }), 200);
    expect(renamed).toMatchObject({ subject: 'Renamed by B', subjectOwner: jid(b) });
    expect((await events.next(a.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'update')).data).toMatchObject({
      author: jid(b),
      changes: { subject: 'Renamed by B' },
    });
    expect(expectStatus(await post(b, '/group/description', { groupId: group.groupId, description: 'About us' }), 200).description).toBe(
      'About us',
    );
    expect(expectStatus(await post(b, '/group/description', { groupId: group.groupId, description: '' }), 200).description).toBeNull();

    expect(expectStatus(await get(b, `/group/picture?groupId=${group.groupId}`), 200)).toEqual({
      jid: group.groupId,
      pictureId: null,
      url: null,
    });
    const picture = expectStatus(await post(b, '/group/picture', { groupId: group.groupId, image: PNG_BASE64 }), 200);
    expect(picture.url).toBe(`data:image/png;base64,${PNG_BASE64}`);
    expect(expectStatus(await get(a, `/group/picture?groupId=${group.groupId}`), 200)).toEqual(picture);
    expect(groupEvents(a, group.groupId, 'update').some((e) => e.data.changes.pictureId === picture.pictureId)).toBe(true);
    expectError(
      await post(b, '/group/picture', { groupId: group.groupId, image: Buffer.from('GIF89a-not-allowed').toString('base64') }),
      400,
      /JPEG or PNG/,
    );
    expectError(await post(b, '/group/picture', { groupId: group.groupId, image: 'data:image/png,notbase64!!!!!!!!!' }), 400, /base64/);

    const locked = expectStatus(await post(a, '/group/settings', { groupId: group.groupId, locked: true }), 200);
    expect(locked.locked).toBe(true);
    expectError(
      await post(b, '/group/subject', { groupId: group.groupId, subject: 'nope' }),
      403,
      /only group admins can change the subject/,
    );
    expectError(await post(b, '/group/picture/remove', { groupId: group.groupId }), 403, /only group admins/);
    expect(expectStatus(await post(a, '/group/picture/remove', { groupId: group.groupId }), 200)).toEqual({
      jid: group.groupId,
      pictureId: null,
      url: null,
    });
    expectError(await post(a, '/group/picture/remove', { groupId: group.groupId }), 404, /picture not found/);
  });

  it('changes settings (admins only) and tells the participants what changed', async () => {
    const group = await newGroup(a, [b.number!]);
    expectError(
      await post(b, '/group/settings', { groupId: group.groupId, announce: true }),
      403,
      /only group admins can change group settings/,
    );
    const changed = expectStatus(
      await post(a, '/group/settings', { groupId: group.groupId, announce: true, joinApproval: true, ephemeral: 604800 }),
      200,
    );
    expect(changed).toMatchObject({ announce: true, joinApproval: true, ephemeral: 604800, locked: false });
    const event = await events.next(b.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'update');
    expect(event.data.changes).toEqual({ announce: true, joinApproval: true, ephemeral: 604800 });
    expectError(await post(a, '/group/settings', { groupId: group.groupId, ephemeral: 5 }), 400, /ephemeral/);
    expectError(await post(a, '/group/settings', { groupId: group.groupId }), 400, /fewer than 2|minProperties|must NOT have fewer/);
  });

  it('shares, revokes and uses invite links', async () => {
    const group = await newGroup(a, [b.number!], 'Open house');
    expectError(await get(b, `/group/invite-link?groupId=${group.groupId}`), 403, /only group admins can see the invite link/);
    const invite = expectStatus(await get(a, `/group/invite-link?groupId=${group.groupId}`), 200);
    expect(invite.inviteLink).toBe(`https://chat.whatsapp.com/${invite.inviteCode}`);

    const preview = expectStatus(await get(c, `/group/invite-info?inviteCode=${encodeURIComponent(invite.inviteLink)}`), 200);
    expect(preview).toMatchObject({ groupId: group.groupId, subject: 'Open house', size: 2, joinApproval: false, owner: jid(a) });

    expect(expectStatus(await post(c, '/group/join', { inviteCode: invite.inviteCode }), 200)).toEqual({
      groupId: group.groupId,
      status: 'joined',
    });
    expect((await events.next(a.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'join')).data.participants).toEqual([
      jid(c),
    ]);
    expectError(await post(c, '/group/join', { inviteCode: invite.inviteCode }), 409, /already a participant/);

    const revoked = expectStatus(await post(a, '/group/invite-link/revoke', { groupId: group.groupId }), 200);
    expect(revoked.inviteCode).not.toBe(invite.inviteCode);
    expectError(await get(c, `/group/invite-info?inviteCode=${invite.inviteCode}`), 404, /invalid or was revoked/);
    expectError(await post(c, '/group/join', { inviteCode: 'not a code!' }), 400, /inviteCode/);
    expect(groupEvents(a, group.groupId, 'update').some((e) => e.data.changes.inviteLinkRevoked === true)).toBe(true);
  });

  it('turns joins into requests with join approval; admins approve or reject them', async () => {
    const group = await newGroup(a, [b.number!], 'Club');
    expectStatus(await post(a, '/group/settings', { groupId: group.groupId, joinApproval: true }), 200);
    const { inviteCode } = expectStatus(await get(a, `/group/invite-link?groupId=${group.groupId}`), 200);
    const [first, second] = [uniqueNumber(), uniqueNumber()];
    for (const number of [first, second]) {
      const joined = await gw.api('POST', '/api/v1/sandbox/groups/join', { key: gw.adminKey, body: { number, inviteCode } });
      expect(expectStatus(joined, 200)).toEqual({ groupId: group.groupId, status: 'requested' });
    }
    expect(expectStatus(await post(c, '/group/join', { inviteCode }), 200).status).toBe('requested');
    expect(
      (await events.next(a.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'join_request')).data.participants,
    ).toEqual([jid(first)]);

    expectError(await get(b, `/group/requests?groupId=${group.groupId}`), 403, /only group admins/);
    const requests = expectStatus(await get(a, `/group/requests?groupId=${group.groupId}`), 200);
    expect(requests).toMatchObject({ total: 3 });
    expect(requests.items.map((r: any) => r.number)).toEqual([first, second, c.number]);

    const approved = expectStatus(
      await post(a, '/group/requests/approve', { groupId: group.groupId, participants: [first, c.number, uniqueNumber()] }),
      200,
    );
    expect(approved.results.map((r: any) => r.status)).toEqual(['ok', 'ok', 'no_request']);
    expect((await events.next(c.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'add')).data.participants).toEqual([
      jid(first),
      jid(c),
    ]);
    const rejected = expectStatus(await post(a, '/group/requests/reject', { groupId: group.groupId, participants: [second] }), 200);
    expect(rejected.results[0].status).toBe('ok');
    await events.next(a.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'join_request_rejected');
    expect(expectStatus(await get(a, `/group/requests?groupId=${group.groupId}`), 200).total).toBe(0);
    expect(expectStatus(await get(a, `/group/info?groupId=${group.groupId}`), 200).size).toBe(4);
  });

  it('leaves groups; when the last admin leaves the longest-standing participant becomes admin', async () => {
    const group = await newGroup(a, [b.number!, c.number!]);
    expect(expectStatus(await post(b, '/group/leave', { groupId: group.groupId }), 200)).toEqual({ groupId: group.groupId, left: true });
    await events.next(b.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'leave');
    expect((await events.next(a.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'leave')).data.participants).toEqual([
      jid(b),
    ]);
    expectError(await post(b, '/group/leave', { groupId: group.groupId }), 403, /not a participant/);

    expectStatus(await post(a, '/group/leave', { groupId: group.groupId }), 200);
    const info = expectStatus(await get(c, `/group/info?groupId=${group.groupId}`), 200);
    expect(info.participants).toEqual([{ jid: jid(c), number: c.number, role: 'admin' }]);
    await events.next(c.id, 'GROUP', (e) => e.data.id === group.groupId && e.data.action === 'promote');
    const contact = uniqueNumber();
    const left = await gw.api('POST', '/api/v1/sandbox/groups/leave', {
      key: gw.adminKey,
      body: { number: contact, groupId: group.groupId },
    });
    expectError(left, 409, /not a participant/);
  });
});

describe.each(DIALECTS)('the sandbox world across a restart on %s', (dialect) => {
  it('keeps groups, invite links, newsletters, labels, privacy, chat settings and call history', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-world-'));
    const schema = newSchemaName();
    const number = uniqueNumber();
    const contact = uniqueNumber();
    let gw = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const owner = await connectedInstance(gw, number);
    const get = (route: string) => gw.api('GET', `/api/v1${route}`, { key: owner.token });
    const post = (route: string, body: unknown) => gw.api('POST', `/api/v1${route}`, { key: owner.token, body });

    const { groupId } = expectStatus(await post('/group/create', { subject: 'Durable', participants: [] }), 201).group;
    expectStatus(await post('/group/settings', { groupId, locked: true }), 200);
    const invite = expectStatus(await get(`/group/invite-link?groupId=${groupId}`), 200);
    const { newsletterId } = expectStatus(await post('/newsletter/create', { name: 'Kept' }), 201);
    expectStatus(await post('/newsletter/send', { newsletterId, text: 'kept post' }), 200);
    await sandboxAccount(gw, { number, business: true });
    const label = expectStatus(await post('/label/create', { name: 'Kept label', color: 4 }), 201);
    expectStatus(await post('/user/privacy', { about: 'contacts' }), 200);
    expectStatus(
      await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from: contact, to: number, text: 'hi' } }),
      200,
    );
    expectStatus(await post('/chat/pin', { chatId: contact }), 200);
    expectStatus(await post('/label/apply', { labelId: label.labelId, chatId: contact }), 200);
    const { callId } = expectStatus(
      await gw.api('POST', '/api/v1/sandbox/calls', { key: gw.adminKey, body: { from: contact, to: number } }),
      200,
    );
    expectStatus(await post('/call/reject', { callId }), 200);
    await gw.stop();

    gw = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      expect(expectStatus(await get(`/group/info?groupId=${groupId}`), 200)).toMatchObject({
        subject: 'Durable',
        locked: true,
        participants: [{ number, role: 'superadmin' }],
      });
      expect(expectStatus(await get(`/group/invite-link?groupId=${groupId}`), 200).inviteCode).toBe(invite.inviteCode);
      expect(expectStatus(await get(`/newsletter/info?newsletterId=${newsletterId}`), 200)).toMatchObject({ name: 'Kept', role: 'owner' });
      expect(expectStatus(await get(`/newsletter/messages?newsletterId=${newsletterId}`), 200).items[0].message).toEqual({
        conversation: 'kept post',
      });
      expect(expectStatus(await get('/label/list'), 200).items).toEqual([label]);
      expect(expectStatus(await get('/user/privacy'), 200).about).toBe('contacts');
      // Chat settings survive, and the messages come back from the message store.
      expect(expectStatus(await get(`/chat/info?chatId=${contact}`), 200)).toMatchObject({
        pinned: true,
        labels: [label.labelId],
        lastMessage: { message: { conversation: 'hi' } },
      });
      expect(expectStatus(await get('/call/history'), 200).items[0]).toMatchObject({ callId, status: 'rejected', rejectedBy: 'user' });
    } finally {
      await gw.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
