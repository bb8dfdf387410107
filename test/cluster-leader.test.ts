/**
 * Cluster mode: the leader's advisory-lock connection fails (PostgreSQL ended it). The lock only
 * elects the leader there, so that process stops leading and tries to lead again; it goes on
 * serving the instances it holds, and admin routes answer through every process once one leads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterEnv,
  connectedInstance,
  startCluster,
  uniqueNumber,
  waitFor,
  type TestCluster,
  type TestGateway,
} from './support/gateway.js';

describe('the cluster leader loses its lock connection', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster(2, clusterEnv());
  }, 60_000);

  afterAll(() => cluster.stop(), 60_000);

  const leaders = () => cluster.gateways.filter((gw) => gw.cluster!.node.leaderPlacement()?.here === true);
  /** The connection holding the leader lock (every process's lock connection names itself after the lock). */
  const lockHolder = async () =>
    (
      await cluster.query<{ pid: number }>(
        `select a.pid from pg_stat_activity a join pg_locks l on l.pid = a.pid
          where a.application_name = 'waygate:${cluster.schema}' and l.locktype = 'advisory' and l.granted`,
      )
    )[0]?.pid;

  it('stops leading, keeps its instances, and a process leads again', async () => {
    const leader = await waitFor(() => (leaders().length === 1 ? leaders()[0] : undefined), 10_000, 'one leader');
    // An instance held by the leader.
    let held: { id: string; token: string } | undefined;
    for (let i = 0; i < 8 && !held; i += 1) {
      const instance = await connectedInstance(cluster.gateways[i % 2]!, uniqueNumber());
      const owners = await waitFor(
        async () => ((await cluster.owners()).get(instance.id) ? cluster.owners() : undefined),
        10_000,
        'leased',
      );
      if (owners.get(instance.id) === leader.cluster!.node.nodeId) held = instance;
    }
    if (!held) throw new Error('the leader took none of eight instances');
    const before = await lockHolder();
    expect(before).toBeDefined();

    await cluster.query(`select pg_terminate_backend(${before})`);

    // The lock is taken again (a new connection, by either process) and one process leads.
    await waitFor(
      async () => {
        const now = await lockHolder();
        return now !== undefined && now !== before && leaders().length === 1 ? true : undefined;
      },
      15_000,
      'a process leads again',
    );
    // The former leader did not stop: it goes on renewing its instance's lease (a stopping process
    // would hand it over) and listening.
    const leaseOf = async () =>
      (
        await cluster.query<{ owner: string; expires_at: string }>(
          `select owner, expires_at from "${cluster.schema}".instance_leases where instance_id = '${held.id}'`,
        )
      )[0]!;
    let renewals = 0;
    let last = Number((await leaseOf()).expires_at);
    await waitFor(
      async () => {
        const lease = await leaseOf();
        expect(lease.owner).toBe(leader.cluster!.node.nodeId);
        if (Number(lease.expires_at) > last) renewals += 1;
        last = Number(lease.expires_at);
        return renewals >= 3 ? true : undefined;
      },
      15_000,
      'the former leader renews its lease three times',
    );
    expect(leader.app.server.listening).toBe(true);
    // The former leader still serves: its instance sends through it and through the other process.
    const send = (gw: TestGateway) =>
      gw.api('POST', '/api/v1/send/text', { key: held.token, body: { number: uniqueNumber(), text: 'still here' } });
    for (const gw of cluster.gateways) expect((await send(gw)).status).toBe(200);
    // Admin routes answer through every process (served by whichever leads).
    for (const gw of cluster.gateways) {
      const listed = await gw.api('GET', '/api/v1/instance/all', { key: gw.adminKey });
      expect(listed.status).toBe(200);
    }
  });
});
