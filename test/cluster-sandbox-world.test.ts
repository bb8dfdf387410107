/**
 * The sandbox world in cluster mode: a group made or changed by an instance held by one process is
 * seen by a member held by another process (its documents are announced and read again there).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instancesApart, startCluster, waitFor, type TestCluster, type TestGateway, type TestInstance } from './support/gateway.js';

describe('the sandbox world across the processes of a cluster', () => {
  let cluster: TestCluster;
  let gateways: TestGateway[];
  let a: TestInstance;
  let b: TestInstance;
  let owners: Map<string, string>;

  beforeAll(async () => {
    cluster = await startCluster(2);
    gateways = cluster.gateways;
    // Two instances held by different processes.
    [a, b] = (await instancesApart(cluster)) as [TestInstance, TestInstance];
    owners = await cluster.owners();
  }, 60_000);

  afterAll(() => cluster.stop(), 60_000);

  it("a member held elsewhere sees the group made by another process's instance, and its changes", async () => {
    const made = await gateways[0]!.api('POST', '/api/v1/group/create', {
      key: a.token,
      body: { subject: 'Across', participants: [b.number] },
    });
    expect(made.status).toBe(201);
    const { group, results } = made.body as { group: { groupId: string }; results: { status: string }[] };
    const groupId = group.groupId;
    // The member's number, linked in the other process, is known here.
    expect(results.map((r) => r.status)).toEqual(['ok']);
    const subjectSeenBy = async (gw: TestGateway) => {
      const info = await gw.api('GET', `/api/v1/group/info?groupId=${encodeURIComponent(groupId)}`, { key: b.token });
      return info.status === 200 ? (info.body as { subject: string }).subject : info.status;
    };
    await waitFor(async () => ((await subjectSeenBy(gateways[1]!)) === 'Across' ? true : undefined), 10_000, 'the member sees the group');
    expect((await gateways[1]!.api('POST', '/api/v1/group/subject', { key: a.token, body: { groupId, subject: 'Renamed' } })).status).toBe(
      200,
    );
    await waitFor(async () => ((await subjectSeenBy(gateways[0]!)) === 'Renamed' ? true : undefined), 10_000, 'the member sees the change');
  });

  it('a newsletter made and deleted by an instance of one process comes and goes for the others', async () => {
    const made = await gateways[0]!.api('POST', '/api/v1/newsletter/create', { key: a.token, body: { name: 'Across news' } });
    expect(made.status).toBe(201);
    const { newsletterId } = made.body as { newsletterId: string };
    const seenByB = async () =>
      (await gateways[1]!.api('GET', `/api/v1/newsletter/info?newsletterId=${encodeURIComponent(newsletterId)}`, { key: b.token })).status;
    await waitFor(async () => ((await seenByB()) === 200 ? true : undefined), 10_000, 'the newsletter seen elsewhere');
    expect((await gateways[0]!.api('POST', '/api/v1/newsletter/delete', { key: a.token, body: { newsletterId } })).status).toBe(200);
    await waitFor(async () => ((await seenByB()) === 404 ? true : undefined), 10_000, 'the deletion seen elsewhere');
  });

  it("a chat's settings go with its instance to the process that takes it over", async () => {
    expect(
      (await gateways[0]!.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: 'hello b' } })).status,
    ).toBe(200);
    // The message crosses to b's process, where b's chat with a appears; b pins it.
    await waitFor(
      async () =>
        (await gateways[0]!.api('POST', '/api/v1/chat/pin', { key: b.token, body: { chatId: a.number } })).status === 200
          ? true
          : undefined,
      10_000,
      "b's chat with a pinned",
    );
    // The process holding b leaves; the other takes b over and answers with what b's process stored.
    const holder = gateways.find((gw) => gw.cluster!.node.nodeId === owners.get(b.id))!;
    const remaining = gateways.find((gw) => gw !== holder)!;
    await holder.stop();
    gateways.splice(gateways.indexOf(holder), 1);
    const chat = await waitFor(
      async () => {
        const list = await remaining.api('GET', '/api/v1/chat/list', { key: b.token });
        if (list.status !== 200) return undefined;
        return (list.body.items as { chatId: string; pinned: boolean }[]).find((c) => c.chatId === `${a.number}@s.whatsapp.net`);
      },
      20_000,
      "b's chats served by the remaining process",
    );
    expect(chat.pinned).toBe(true);
  });
});
