/** Sending to a group on the sandbox: every other participant receives it, with the network's refusals. */
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

describe('/send to a group', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let owner: TestInstance;
  let member: TestInstance;
  let outsider: TestInstance;
  let groupId: string;
  const { post } = instanceCalls(() => gw);

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
    owner = await connectedInstance(gw, uniqueNumber());
    member = await connectedInstance(gw, uniqueNumber());
    outsider = await connectedInstance(gw, uniqueNumber());
    const created = expectStatus(await post(owner, '/group/create', { subject: 'Team', participants: [member.number] }), 201);
    groupId = created.group.groupId;
  });
  afterAll(async () => gw.stop());

  it('reaches every other participant, with the group as chat and the sender as participant', async () => {
    const sent = expectStatus(await post(owner, '/send/text', { number: groupId, text: 'hello team' }), 200);
    expect(sent.key).toMatchObject({ remoteJid: groupId, fromMe: true });
    const received = await events.next(member.id, 'MESSAGE', (e) => e.data.key.id === sent.key.id);
    expect(received.data).toMatchObject({
      key: { remoteJid: groupId, fromMe: false },
      participant: `${owner.number}@s.whatsapp.net`,
      message: { conversation: 'hello team' },
    });
    // The sender does not receive its own message back, and outsiders see nothing.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events.all.filter((e) => e.event === 'MESSAGE' && e.data.key.id === sent.key.id).map((e) => e.instanceId)).toEqual([member.id]);
  });

  it('refuses non-participants (403), unknown groups (404) and malformed ids (400)', async () => {
    expectError(await post(outsider, '/send/text', { number: groupId, text: 'let me in' }), 403, /not a participant/);
    expectError(await post(owner, '/send/text', { number: '120363000000000000@g.us', text: 'anyone?' }), 404, /not found/);
    expectError(await post(owner, '/send/text', { number: 'team@g.us', text: 'x' }), 400, /number/);
  });

  it('lets only admins write in an announcement group', async () => {
    expectStatus(await post(owner, '/group/settings', { groupId, announce: true }), 200);
    expectError(await post(member, '/send/text', { number: groupId, text: 'may I?' }), 403, /only group admins/);
    expectStatus(await post(owner, '/send/text', { number: groupId, text: 'announcement' }), 200);
    expectStatus(await post(owner, '/group/settings', { groupId, announce: false }), 200);
    expectStatus(await post(member, '/send/text', { number: groupId, text: 'now I may' }), 200);
  });
});
