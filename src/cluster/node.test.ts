/**
 * Leases, hand-overs and the write fence against a real PostgreSQL: two nodes driven tick by tick
 * (`step`), one pausing past its lease while the other takes over.
 */
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxStore } from '../events/outbox.js';
import { InstanceRepo } from '../instance-registry/repo.js';
import { dropSchema, openStorage, type Storage } from '../storage/db.js';
import { StaleOwnerError } from '../storage/fence.js';
import { PG_URL, newSchemaName, waitFor } from '../../test/support/gateway.js';
import { insertInstanceRow } from '../../test/support/rows.js';
import { ClusterNode } from './node.js';
import { preferredNode } from './placement.js';
import { ClusterRepo } from './repo.js';

const log = pino({ level: 'silent' });
const schema = newSchemaName();
let storage: Storage;
let repo: ClusterRepo;

function node(leaseMs = 60_000) {
  const adopted: string[] = [];
  const dropped: string[] = [];
  /** Instances a phone is being linked to on this node (the pairing hook). */
  const pairing = new Set<string>();
  const n = new ClusterNode(
    repo,
    { leaseMs, tickMs: 3_600_000, movesPerTick: 100 },
    {
      adopt: (id) => {
        adopted.push(id);
        return Promise.resolve();
      },
      drop: (id) => {
        dropped.push(id);
        return Promise.resolve();
      },
      pairing: (id) => pairing.has(id),
    },
    log,
  );
  return { n, adopted, dropped, pairing };
}

async function expire(instanceId: string): Promise<void> {
  await sql`update instance_leases set expires_at = 0 where instance_id = ${instanceId}`.execute(storage.db);
}

async function epoch(instanceId: string): Promise<number> {
  const row = await storage.db
    .selectFrom('instance_leases')
    .select('epoch')
    .where('instance_id', '=', instanceId)
    .executeTakeFirstOrThrow();
  return Number(row.epoch);
}

function event(instanceId: string, id: string) {
  return { eventId: id, instanceId, instanceName: instanceId, type: 'MESSAGE' as const, body: '{}', createdAt: 1, sinks: [] };
}

beforeAll(async () => {
  storage = await openStorage(PG_URL, { schema, poolSize: 4 });
  repo = new ClusterRepo(storage.db);
});

afterAll(async () => {
  await storage.close();
  await dropSchema(PG_URL, schema);
});

describe('cluster node', () => {
  it('takes every free instance alone, then hands the ones a joining node prefers over to it', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `spread-${i}`);
    for (const id of ids) await insertInstanceRow(storage.db, id, id, 'sandbox');
    const a = node();
    await a.n.start('http://a.invalid');
    for (const id of ids) expect(a.n.owns(id)).toBe(true);
    expect(a.adopted).toEqual(expect.arrayContaining(ids));

    const b = node();
    await b.n.start('http://b.invalid');
    // B announced itself; A sees it and gives back what B prefers; B takes it at its next round.
    await a.n.step();
    const toB = ids.filter((id) => preferredNode(id, [a.n.nodeId, b.n.nodeId].sort()) === b.n.nodeId);
    expect(toB.length).toBeGreaterThan(0);
    expect(a.dropped.sort()).toEqual([...toB].sort());
    await b.n.step();
    for (const id of ids) expect(a.n.owns(id) !== b.n.owns(id)).toBe(true);
    for (const id of toB) {
      expect(b.n.owns(id)).toBe(true);
      // One change of owner after the first lease: epoch 2.
      expect(await epoch(id)).toBe(2);
    }
    await b.n.stop();
    await a.n.step();
    for (const id of ids) expect(a.n.owns(id)).toBe(true);
    await a.n.stop();
  });

  it('keeps an instance a phone is being linked to until it is linked, then hands it to the node it prefers', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `linking-${i}`);
    for (const id of ids) await insertInstanceRow(storage.db, id, id, 'sandbox');
    const a = node();
    await a.n.start('http://a.invalid');
    const b = node();
    await b.n.start('http://b.invalid');
    const toB = ids.filter((id) => preferredNode(id, [a.n.nodeId, b.n.nodeId].sort()) === b.n.nodeId);
    expect(toB.length).toBeGreaterThan(1);
    const [linking, ...others] = toB as [string, ...string[]];
    a.pairing.add(linking);

    await a.n.step();
    // The others move; the one showing a QR code stays with its session.
    // (A also took the free instances earlier tests left; only this test's are looked at.)
    const mine = (dropped: string[]) => dropped.filter((id) => ids.includes(id)).sort();
    expect(mine(a.dropped)).toEqual([...others].sort());
    expect(a.n.owns(linking)).toBe(true);
    await b.n.step();
    for (const id of others) expect(b.n.owns(id)).toBe(true);
    expect(b.n.owns(linking)).toBe(false);

    // Linked: it moves at A's next round.
    a.pairing.delete(linking);
    await a.n.step();
    expect(a.dropped).toContain(linking);
    await b.n.step();
    expect(b.n.owns(linking)).toBe(true);
    await b.n.stop();
    await a.n.stop();
  });

  it('a draining node gives back an instance being linked too', async () => {
    await insertInstanceRow(storage.db, 'linking-drain', 'linking-drain', 'sandbox');
    const a = node();
    await a.n.start('http://a.invalid');
    expect(a.n.owns('linking-drain')).toBe(true);
    a.pairing.add('linking-drain');
    await a.n.stop();
    expect(a.dropped).toContain('linking-drain');
    const b = node();
    await b.n.start('http://b.invalid');
    expect(b.n.owns('linking-drain')).toBe(true);
    await b.n.stop();
  });

  it('a paused owner whose lease was taken cannot store events or connection state for it', async () => {
    await insertInstanceRow(storage.db, 'fenced', 'fenced', 'sandbox');
    const a = node();
    const b = node();
    await a.n.start('http://a.invalid');
    expect(a.n.owns('fenced')).toBe(true);
    const outboxA = new OutboxStore(storage.db);
    outboxA.fenceWith(a.n.fence);
    await outboxA.append([event('fenced', 'e-1')]);

    // A "pauses": its lease runs out and B takes the instance (epoch + 1) before A renews.
    await expire('fenced');
    await b.n.start('http://b.invalid');
    expect(await b.n.claimNow('fenced')).toBe(true);
    expect(a.n.epochOf('fenced')).toBe((await epoch('fenced')) - 1);

    // A still believes it holds it; the database refuses its writes.
    await expect(outboxA.append([event('fenced', 'e-2')])).rejects.toBeInstanceOf(StaleOwnerError);
    const instances = new InstanceRepo(storage.db);
    await expect(instances.update('fenced', { status: 'DISCONNECTED', updated_at: 2 }, a.n.fence)).rejects.toBeInstanceOf(StaleOwnerError);
    const row = await storage.db.selectFrom('instances').select('status').where('id', '=', 'fenced').executeTakeFirstOrThrow();
    expect(row.status).toBe('created');
    // The new owner writes.
    const outboxB = new OutboxStore(storage.db);
    outboxB.fenceWith(b.n.fence);
    await outboxB.append([event('fenced', 'e-3')]);
    const stored = await storage.db.selectFrom('outbox').select('event_id').where('instance_id', '=', 'fenced').orderBy('seq').execute();
    expect(stored.map((r) => r.event_id)).toEqual(['e-1', 'e-3']);

    // At its next round A learns it lost the lease and closes the session.
    await a.n.step();
    expect(a.dropped).toContain('fenced');
    expect(a.n.owns('fenced')).toBe(false);
    await a.n.stop();
    await b.n.stop();
  });

  it('a take-over waits for a write under the fence to commit', async () => {
    await insertInstanceRow(storage.db, 'locked', 'locked', 'sandbox');
    const a = node(1000);
    const b = node();
    await a.n.start('http://a.invalid');
    await b.n.start('http://b.invalid');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let fenced!: () => void;
    const passed = new Promise<void>((resolve) => (fenced = resolve));
    const write = storage.db.transaction().execute(async (trx) => {
      expect(await a.n.fence(trx, ['locked'])).toEqual([]);
      fenced();
      await held;
    });
    await passed;
    // The lease runs out meanwhile (reading it takes no lock); then B tries to take it.
    await waitFor(
      async () => {
        const { rows } = await sql<{
          expired: boolean;
        }>`select expires_at <= (extract(epoch from clock_timestamp()) * 1000)::bigint as expired from instance_leases where instance_id = 'locked'`.execute(
          storage.db,
        );
        return rows[0]!.expired ? true : undefined;
      },
      10_000,
      'the lease running out',
    );
    let claimed: boolean | undefined;
    const claim = b.n.claimNow('locked').then((won) => (claimed = won));
    // B's claim waits on the row lock the fence took.
    await waitFor(
      async () => {
        const { rows } = await sql<{
          n: number;
        }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%instance_leases%'`.execute(
          storage.db,
        );
        return rows[0]!.n > 0 ? true : undefined;
      },
      10_000,
      'the claim waiting on the lease row',
    );
    expect(claimed).toBeUndefined();
    release();
    await write;
    await claim;
    expect(claimed).toBe(true);
    await a.n.stop();
    await b.n.stop();
  });

  it('stops acting for its instances once its lease may have run out, even before it hears so', async () => {
    await insertInstanceRow(storage.db, 'deadline', 'deadline', 'sandbox');
    const a = node(1000);
    await a.n.start('http://a.invalid');
    expect(a.n.owns('deadline')).toBe(true);
    // No round runs (its timer is an hour): after 0.8 of the lease it no longer owns anything.
    await waitFor(() => (a.n.owns('deadline') ? undefined : true), 5000, 'the local deadline');
    await a.n.stop();
  });

  it("a tick's fence and lease renewals lock rows in one order (no deadlock, whatever the table order)", async () => {
    // Rows stored in the reverse of their id order, so a statement locking in table order meets the
    // fence (which locks in id order) from the other end.
    const ids = Array.from({ length: 60 }, (_, i) => `order-${String(i).padStart(2, '0')}`);
    for (const id of [...ids].reverse()) await insertInstanceRow(storage.db, id, id, 'sandbox');
    for (const id of [...ids].reverse()) {
      await sql`insert into instance_leases (instance_id, owner, epoch, expires_at) values (${id}, 'orderer', 1, 9999999999999)`.execute(
        storage.db,
      );
    }
    const fenceHolding = async () =>
      storage.db.transaction().execute(async (trx) => {
        const stale = await repo.stale(trx, 'orderer', ids, () => 1);
        expect(stale).toEqual([]);
        await sql`select pg_sleep(0.002)`.execute(trx);
      });
    const failures: unknown[] = [];
    for (let round = 0; round < 40; round += 1) {
      const outcomes = await Promise.allSettled([
        fenceHolding(),
        repo.renew('orderer', 60_000),
        fenceHolding(),
        repo.claim('other', ids, 60_000),
      ]);
      for (const outcome of outcomes) if (outcome.status === 'rejected') failures.push(outcome.reason);
    }
    expect(failures.map(String)).toEqual([]);
  });
});
