/**
 * Failover groups in cluster mode: a group created, changed, given a new token or deleted through
 * one process (the leader serves admin routes) is used the same way through every process.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PG_URL,
  clusterEnv,
  connectedInstance,
  newSchemaName,
  startGateway,
  uniqueName,
  uniqueNumber,
  waitFor,
  type TestGateway,
  type TestInstance,
} from '../../../test/support/gateway.js';
import { dropSchema } from '../../storage/db.js';

const schema = newSchemaName();
const env = clusterEnv({ TOKEN_GRACE_SECONDS: '3600' });

describe('failover groups across the processes of a cluster', () => {
  const gateways: TestGateway[] = [];
  let db: pg.Pool;
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
    db = new pg.Pool({ connectionString: PG_URL, max: 2 });
    for (let i = 0; i < 2; i += 1) gateways.push(await startGateway({ dialect: 'postgres', schema, keepSchema: true, env }));
    await waitFor(
      async () =>
        (await db.query(`select count(*)::int as n, count(*) filter (where leader)::int as leaders from "${schema}".cluster_nodes`)).rows[0]
          .leaders === 1 || undefined,
      30_000,
      'a leader among two nodes',
    );
    first = await connectedInstance(gateways[0]!, uniqueNumber());
    second = await connectedInstance(gateways[1]!, uniqueNumber());
  }, 60_000);

  afterAll(async () => {
    for (const gw of gateways) await gw.stop().catch(() => undefined);
    await db.end();
    await dropSchema(PG_URL, schema);
  }, 60_000);

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
    await waitFor(async () => {
      const senders = await sendersThroughEach(token);
      return senders.every((id) => id === second.id) || undefined;
    }, 10_000, 'every process sends through the changed members');

    const rotated = await gateways[0]!.api('POST', `/api/v1/admin/failover-groups/${groupId}/rotate-token`, { key: gateways[0]!.adminKey });
    expect(rotated.status).toBe(200);
    const { newToken } = rotated.body as { newToken: string };
    expect(await sendersThroughEach(newToken)).toEqual([second.id, second.id]);
    // The old token keeps working for its grace period.
    expect(await sendersThroughEach(token)).toEqual([second.id, second.id]);

    expect((await gateways[1]!.api('DELETE', `/api/v1/admin/failover-groups/${groupId}`, { key: gateways[1]!.adminKey })).status).toBe(200);
    await waitFor(async () => {
      const refused = [...(await sendersThroughEach(newToken)), ...(await sendersThroughEach(token))];
      return refused.every((status) => status === 401) || undefined;
    }, 10_000, 'both tokens refused by every process');
  });
});
