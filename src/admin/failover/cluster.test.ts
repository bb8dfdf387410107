/**
 * Failover groups in cluster mode: a group created, changed, given a new token or deleted through
 * one process (the leader serves admin routes) is used the same way through every process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterEnv,
  connectedInstance,
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
    first = await connectedInstance(gateways[0]!, uniqueNumber());
    second = await connectedInstance(gateways[1]!, uniqueNumber());
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

  it('members held by different processes share the sends (round-robin), through every process', async () => {
    const instances: TestInstance[] = [];
    for (let i = 0; i < 6; i += 1) instances.push(await connectedInstance(gateways[i % 2]!, uniqueNumber()));
    const owners = await waitFor(
      async () => {
        const map = await cluster.owners();
        return instances.every((i) => map.get(i.id)) ? map : undefined;
      },
      10_000,
      'every instance leased',
    );
    const here = instances[0]!;
    const elsewhere = instances.find((i) => owners.get(i.id) !== owners.get(here.id));
    if (!elsewhere) throw new Error('all six instances are held by one process');
    const created = await gateways[0]!.api('POST', '/api/v1/admin/failover-groups', {
      key: gateways[0]!.adminKey,
      body: { name: uniqueName('group'), members: [here.id, elsewhere.id], policy: 'round-robin', sticky: false },
    });
    expect(created.status).toBe(201);
    const senders: (string | number)[] = [];
    for (let i = 0; i < 4; i += 1) senders.push(...(await sendersThroughEach((created.body as { token: string }).token)));
    // One process picks (the first member's); the other member's turns are sent by its own process.
    expect(senders.filter((s) => s === here.id)).toHaveLength(4);
    expect(senders.filter((s) => s === elsewhere.id)).toHaveLength(4);
  });
});
