/**
 * The cluster's tables (PostgreSQL): `cluster_nodes` (who is there, where to reach it) and
 * `instance_leases` (who holds each instance's session, until when, at which epoch). Every time is
 * the database's clock in milliseconds, so processes never compare their own clocks.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../storage/schema.js';

const NOW: RawBuilder<number> = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export interface NodeRow {
  nodeId: string;
  address: string;
  draining: boolean;
  leader: boolean;
  /** Heard from within the lease time. */
  live: boolean;
}

export interface LeaseView {
  instanceId: string;
  owner: string | null;
  epoch: number;
  /** The lease ran out (or was given back): anyone may take it. */
  free: boolean;
  /** Free for longer than a lease time (never leased: created that long ago): the process it was meant for is not taking it. */
  longFree: boolean;
}

export interface HeldLease {
  instanceId: string;
  epoch: number;
}

export class ClusterRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** Announces the node (or says it is still there). */
  async heartbeat(nodeId: string, address: string, draining: boolean, leader: boolean): Promise<void> {
    await sql`insert into cluster_nodes (node_id, address, started_at, heartbeat_at, draining, leader)
      values (${nodeId}, ${address}, ${NOW}, ${NOW}, ${draining}, ${leader})
      on conflict (node_id) do update set address = excluded.address, heartbeat_at = excluded.heartbeat_at,
        draining = excluded.draining, leader = excluded.leader`.execute(this.db);
  }

  /** Every node heard from within `staleMs` (live ones within `leaseMs`); older rows are dropped. */
  async nodes(leaseMs: number, staleMs: number): Promise<NodeRow[]> {
    await sql`delete from cluster_nodes where heartbeat_at < ${NOW} - ${staleMs}`.execute(this.db);
    const { rows } = await sql<{ node_id: string; address: string; draining: boolean; leader: boolean; live: boolean }>`
      select node_id, address, draining, leader, heartbeat_at > ${NOW} - ${leaseMs} as live from cluster_nodes order by node_id`.execute(
      this.db,
    );
    return rows.map((row) => ({ nodeId: row.node_id, address: row.address, draining: row.draining, leader: row.leader, live: row.live }));
  }

  async removeNode(nodeId: string): Promise<void> {
    await this.db.deleteFrom('cluster_nodes').where('node_id', '=', nodeId).execute();
  }

  /** Extends every lease `nodeId` holds; answers those it still holds (one statement for all). */
  async renew(nodeId: string, leaseMs: number): Promise<HeldLease[]> {
    // Rows are locked in instance id order, as the fence (`stale`) and `claim` lock them: a renewal
    // locking in table order deadlocked with a tick's fence holding some of the same rows.
    const { rows } = await sql<{ instance_id: string; epoch: string | number }>`
      update instance_leases set expires_at = ${NOW} + ${leaseMs}
      where instance_id in (
        select instance_id from instance_leases where owner = ${nodeId} and expires_at > ${NOW} order by instance_id for update
      )
      returning instance_id, epoch`.execute(this.db);
    return rows.map((row) => ({ instanceId: row.instance_id, epoch: Number(row.epoch) }));
  }

  /** Every instance with its lease (none yet: owner null, epoch 0, free). */
  async leases(leaseMs: number): Promise<LeaseView[]> {
    // A new instance gets a free lease row first, so it is long free only a lease time later (until
    // then only the process it prefers takes it, instead of whichever process ticks first).
    await sql`insert into instance_leases (instance_id, owner, epoch, expires_at)
      select i.id, null, 0, ${NOW} from instances i where not exists (select 1 from instance_leases l where l.instance_id = i.id)
      order by i.id
      on conflict (instance_id) do nothing`.execute(this.db);
    const { rows } = await sql<{ id: string; owner: string | null; epoch: string | number | null; free: boolean; long_free: boolean }>`
      select i.id, l.owner, l.epoch,
        (l.instance_id is null or l.owner is null or l.expires_at <= ${NOW}) as free,
        (case when l.instance_id is null then i.created_at <= ${NOW} - ${leaseMs} else l.expires_at <= ${NOW} - ${leaseMs} end) as long_free
      from instances i left join instance_leases l on l.instance_id = i.id`.execute(this.db);
    return rows.map((row) => ({
      instanceId: row.id,
      owner: row.free ? null : row.owner,
      epoch: Number(row.epoch ?? 0),
      free: row.free,
      longFree: row.long_free,
    }));
  }

  /** The lease of one instance now (a request for it found no owner in the last scan). */
  async lease(instanceId: string): Promise<LeaseView | undefined> {
    const { rows } = await sql<{ owner: string | null; epoch: string | number | null; free: boolean }>`
      select l.owner, l.epoch, (l.instance_id is null or l.owner is null or l.expires_at <= ${NOW}) as free
      from instances i left join instance_leases l on l.instance_id = i.id where i.id = ${instanceId}`.execute(this.db);
    const row = rows[0];
    if (!row) return undefined;
    return { instanceId, owner: row.free ? null : row.owner, epoch: Number(row.epoch ?? 0), free: row.free, longFree: false };
  }

  /**
   * Takes the free leases among `instanceIds` (never one another process holds): each taken lease's
   * epoch grows by one. Answers what was taken.
   */
  async claim(nodeId: string, instanceIds: string[], leaseMs: number): Promise<HeldLease[]> {
    if (instanceIds.length === 0) return [];
    const { rows } = await sql<{ instance_id: string; epoch: string | number }>`
      insert into instance_leases (instance_id, owner, epoch, expires_at)
      select id, ${nodeId}, 1, ${NOW} + ${leaseMs} from unnest(${instanceIds}::text[]) as wanted(id)
        where exists (select 1 from instances where instances.id = wanted.id)
        order by id
      on conflict (instance_id) do update set owner = excluded.owner, epoch = instance_leases.epoch + 1, expires_at = excluded.expires_at
        where instance_leases.owner is null or instance_leases.expires_at <= ${NOW}
      returning instance_id, epoch`.execute(this.db);
    return rows.map((row) => ({ instanceId: row.instance_id, epoch: Number(row.epoch) }));
  }

  /** Gives a lease back (a clean hand-over): free at once, same epoch until the next owner takes it. */
  async release(nodeId: string, lease: HeldLease): Promise<void> {
    await sql`update instance_leases set owner = null, expires_at = ${NOW}
      where instance_id = ${lease.instanceId} and owner = ${nodeId} and epoch = ${lease.epoch}`.execute(this.db);
  }

  /**
   * The fence (storage/fence.ts): which of `instanceIds` `nodeId` does not hold at the epoch it
   * believes (`epochOf`), read with a share lock that makes a concurrent take-over wait for `trx`.
   */
  async stale(
    trx: Kysely<Database>,
    nodeId: string,
    instanceIds: string[],
    epochOf: (id: string) => number | undefined,
  ): Promise<string[]> {
    const { rows } = await sql<{ instance_id: string; epoch: string | number }>`
      select instance_id, epoch from instance_leases
      where instance_id = any(${instanceIds}::text[]) and owner = ${nodeId} and expires_at > ${NOW}
      order by instance_id for share`.execute(trx);
    const held = new Map(rows.map((row) => [row.instance_id, Number(row.epoch)]));
    return instanceIds.filter((id) => {
      const epoch = epochOf(id);
      return epoch === undefined || held.get(id) !== epoch;
    });
  }
}
