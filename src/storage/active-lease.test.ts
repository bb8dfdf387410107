/**
 * The active-process lock on a real PostgreSQL, reached through a TCP relay the test can cut: a
 * standby that lost the database for a while takes the lock once it is back, and an active process
 * whose lock connection ends says so.
 */
import net from 'node:net';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { TcpProxy } from '../../test/support/brokers.js';
import { PG_URL, waitFor } from '../../test/support/gateway.js';
import { freePort } from '../../test/support/process.js';
import { acquireActiveLease, type ActiveLease } from './active-lease.js';

const POLL_MS = 100;
const log = pino({ level: 'silent' });
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A relay to the test database, and its URL. */
async function relay(): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(PG_URL);
  const proxy = new TcpProxy(await freePort(), Number(target.port || 5432));
  await proxy.start();
  cleanups.push(() => proxy.stop());
  target.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: target.toString() };
}

/** A plain connection holding the lock of `schema` (as another gateway process would). */
async function holder(schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  cleanups.push(() => client.end());
  const { rows } = await client.query<{ won: boolean }>('select pg_try_advisory_lock(hashtext($1)) as won', [`waygate:${schema}`]);
  expect(rows[0]!.won).toBe(true);
  return client;
}

async function lease(url: string, schema: string, onLost: (error: Error) => void = () => undefined, rejoin = false): Promise<ActiveLease> {
  const acquired = await acquireActiveLease(url, schema, POLL_MS, log, onLost, { rejoin });
  cleanups.push(() => acquired.close());
  return acquired;
}

const schemaName = () => `lease_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

describe('the active-process lock on PostgreSQL', () => {
  it('a standby that could not reach the database for a while takes the lock once it is back', async () => {
    const schema = schemaName();
    const other = await holder(schema);
    const { proxy, url } = await relay();
    const standby = await lease(url, schema);
    expect(standby.role).toBe('standby');
    // The database goes away (its connection ends) and every new connection fails, for three tries...
    await proxy.stop();
    let refused = 0;
    const away = net.createServer((socket) => {
      refused += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => away.listen(proxy.port, '127.0.0.1', resolve));
    await waitFor(() => (refused >= 3 ? true : undefined), 10_000, 'three failed tries');
    await new Promise((resolve) => away.close(resolve));
    // ...comes back, and the process that held the lock lets it go.
    await proxy.start();
    await other.query('select pg_advisory_unlock(hashtext($1))', [`waygate:${schema}`]);
    await waitFor(() => (standby.role === 'active' ? true : undefined), 10_000, 'the standby takes the lock');
  });

  it('an active process whose lock connection ends reports it, and the lock is free for another', async () => {
    const schema = schemaName();
    const lost: Error[] = [];
    const active = await lease(PG_URL, schema, (error) => lost.push(error));
    expect(active.role).toBe('active');
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    cleanups.push(() => admin.end());
    // The lock's connection names itself after the lock.
    const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
      `waygate:${schema}`,
    ]);
    expect(rowCount).toBe(1);
    await waitFor(() => (lost.length > 0 ? true : undefined), 10_000, 'the lost lock reported');
    const next = await lease(PG_URL, schema);
    expect(next.role).toBe('active');
  });

  it('with rejoin (cluster mode) a process whose lock connection ends stands by and takes the lock again', async () => {
    const schema = schemaName();
    const lost: Error[] = [];
    const leader = await lease(PG_URL, schema, (error) => lost.push(error), true);
    expect(leader.role).toBe('active');
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [`waygate:${schema}`]);
    await waitFor(() => (lost.length > 0 ? true : undefined), 10_000, 'the lost lock reported');
    // Nobody else wants it: the same process takes it again, on a new connection.
    await leader.whenActive();
    expect(leader.role).toBe('active');
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity a join pg_locks l on l.pid = a.pid
        where a.application_name = $1 and l.locktype = 'advisory' and l.granted`,
      [`waygate:${schema}`],
    );
    expect(rows[0]!.n).toBe(1);
  });
});
