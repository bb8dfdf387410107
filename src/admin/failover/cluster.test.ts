/**
 * Failover groups in cluster mode: a group created, changed, given a new token or deleted through
 * one process (the leader serves admin routes) is used the same way through every process.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSamples } from '../../../test/support/media.js';
import {
  clusterEnv,
  instancesApart,
  startCluster,
  uniqueName,
  uniqueNumber,
  waitFor,
  type TestCluster,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';

describe('failover groups across the processes of a cluster', () => {
  let cluster: TestCluster;
  let gateways: TestGateway[];
  let first: TestInstance;
  let second: TestInstance;

  /** The member that sent, through each gateway, or the status when the send was refused. */
  async function sendersThroughEach(token: string): Promise<(string | number)[]> {
    const out: (string | number)[] = [];
    for (const gw of gateways) {
      const sent = await gw.api('POST', '/api/v1/send/text', { key: token, body: { number: uniqueNumber(), text: 'through the group' } });
      out.push(sent.status === 200 ? (sent.body as { instanceId: string }).instanceId : sent.status);
    }
    return out;
  }

  beforeAll(async () => {
    cluster = await startCluster(2, clusterEnv({ TOKEN_GRACE_SECONDS: '3600' }));
    gateways = cluster.gateways;
    // Settled where the placement wants them: a member being handed over is passed over by the picker.
    [first, second] = (await instancesApart(cluster)) as [TestInstance, TestInstance];
  }, 60_000);

  afterAll(() => cluster.stop(), 60_000);

  it('create, change, rotate and delete through one process; every process follows', async () => {
    const created = await gateways[1]!.api('POST', '/api/v1/admin/failover-groups', {
      key: gateways[1]!.adminKey,
      body: { name: uniqueName('group'), members: [first.id, second.id], policy: 'priority', sticky: false },
    });
    expect(created.status).toBe(201);
    const { groupId, token } = created.body as { groupId: string; token: string };
    // A new token works through every process at once (one not known yet is looked up).
    expect(await sendersThroughEach(token)).toEqual([first.id, first.id]);

    const changed = await gateways[0]!.api('PATCH', `/api/v1/admin/failover-groups/${groupId}`, {
      key: gateways[0]!.adminKey,
      body: { members: [second.id] },
    });
    expect(changed.status).toBe(200);
    await waitFor(
      async () => {
        const senders = await sendersThroughEach(token);
        return senders.every((id) => id === second.id) || undefined;
      },
      10_000,
      'every process sends through the changed members',
    );

    const rotated = await gateways[0]!.api('POST', `/api/v1/admin/failover-groups/${groupId}/rotate-token`, { key: gateways[0]!.adminKey });
    expect(rotated.status).toBe(200);
    const { newToken } = rotated.body as { newToken: string };
    expect(await sendersThroughEach(newToken)).toEqual([second.id, second.id]);
    // The old token keeps working for its grace period.
    expect(await sendersThroughEach(token)).toEqual([second.id, second.id]);

    expect((await gateways[1]!.api('DELETE', `/api/v1/admin/failover-groups/${groupId}`, { key: gateways[1]!.adminKey })).status).toBe(200);
    await waitFor(
      async () => {
        const refused = [...(await sendersThroughEach(newToken)), ...(await sendersThroughEach(token))];
        return refused.every((status) => status === 401) || undefined;
      },
      10_000,
      'both tokens refused by every process',
    );
  });

  /** A group of two connected instances held by different processes, with `policy`. */
  async function groupApart(policy: string, sticky: boolean): Promise<{ here: TestInstance; elsewhere: TestInstance; token: string }> {
    const [here, elsewhere] = (await instancesApart(cluster)) as [TestInstance, TestInstance];
    const created = await gateways[0]!.api('POST', '/api/v1/admin/failover-groups', {
      key: gateways[0]!.adminKey,
      body: { name: uniqueName('group'), members: [here.id, elsewhere.id], policy, sticky },
    });
    expect(created.status).toBe(201);
    return { here, elsewhere, token: (created.body as { token: string }).token };
  }

  it('a sticky recipient keeps its member when that member is held by another process', async () => {
    const { here, elsewhere, token } = await groupApart('round-robin', true);
    const senderOf = async (gw: TestGateway, number: string) => {
      const sent = await gw.api('POST', '/api/v1/send/text', { key: token, body: { number, text: 'sticky' } });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      return (sent.body as { instanceId: string }).instanceId;
    };
    // Round-robin hands the first recipient to the first member and the second to the other one;
    // from then on each recipient keeps its member, whichever process the send comes through.
    const [first, second] = [uniqueNumber(), uniqueNumber()];
    expect(await senderOf(gateways[0]!, first)).toBe(here.id);
    expect(await senderOf(gateways[0]!, second)).toBe(elsewhere.id);
    const again: string[] = [];
    for (let i = 0; i < 3; i += 1) for (const gw of gateways) again.push(await senderOf(gw, second), await senderOf(gw, first));
    expect(again).toEqual(Array.from({ length: 6 }, () => [elsewhere.id, here.id]).flat());
  });

  /** Sends through each gateway in turn, `rounds` times: how many each of the two members sent. */
  async function shares(token: string, rounds: number, here: TestInstance, elsewhere: TestInstance): Promise<[number, number]> {
    const senders: (string | number)[] = [];
    for (let i = 0; i < rounds; i += 1) senders.push(...(await sendersThroughEach(token)));
    return [senders.filter((s) => s === here.id).length, senders.filter((s) => s === elsewhere.id).length];
  }

  it('least-loaded counts the sends it passed on to a member held by another process', async () => {
    const { here, elsewhere, token } = await groupApart('least-loaded', false);
    // One at a time, so each member's count of the last minute decides: they take turns.
    expect(await shares(token, 3, here, elsewhere)).toEqual([3, 3]);
  });

  it('members held by different processes share the sends (round-robin), through every process', async () => {
    const { here, elsewhere, token } = await groupApart('round-robin', false);
    // One process picks (the first member's); the other member's turns are sent by its own process.
    expect(await shares(token, 4, here, elsewhere)).toEqual([4, 4]);

    // Media sends too, as JSON (base64) and as a multipart upload: the member held elsewhere gets the
    // whole body, not what was left of it once the message was built here.
    const { png } = await makeSamples();
    const mediaSenders = async (send: (gw: TestGateway) => Promise<Response>) => {
      const out: string[] = [];
      for (let i = 0; i < 2; i += 1) {
        for (const gw of gateways) {
          const answer = await send(gw);
          const body = (await answer.json()) as { instanceId: string; message: { imageMessage?: { fileSha256: string } } };
          // Every member sent the whole image (its digest travels in the message).
          const whole = body.message?.imageMessage?.fileSha256 === createHash('sha256').update(png).digest('base64');
          out.push(answer.status === 200 && whole ? body.instanceId : `${answer.status} ${JSON.stringify(body)}`);
        }
      }
      return out.sort();
    };
    const asJson = await mediaSenders((gw) =>
      fetch(`${gw.url}/api/v1/send/media`, {
        method: 'POST',
        headers: { apikey: token, 'content-type': 'application/json' },
        body: JSON.stringify({ number: uniqueNumber(), media: { base64: png.toString('base64') }, caption: 'as json' }),
      }),
    );
    expect(asJson).toEqual([here.id, here.id, elsewhere.id, elsewhere.id].sort());
    const asForm = await mediaSenders((gw) => {
      const form = new FormData();
      form.append('number', uniqueNumber());
      form.append('caption', 'as a form');
      form.append('media', new Blob([png], { type: 'image/png' }), 'dot.png');
      return fetch(`${gw.url}/api/v1/send/media`, { method: 'POST', headers: { apikey: token }, body: form });
    });
    expect(asForm).toEqual([here.id, here.id, elsewhere.id, elsewhere.id].sort());
  });
});
