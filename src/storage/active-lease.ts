/**
 * Which gateway process is the active one for a database. Only the active process holds instance
 * sessions and delivers the outbox: two processes doing both would open two sockets per WhatsApp
 * number (each kicking the other off) and deliver every event twice.
 *
 * On PostgreSQL the active process holds a session-level advisory lock on a connection of its own.
 * PostgreSQL releases it when that connection ends, so a crashed process hands over without any
 * expiry to wait for; the others stand by and try again every `pollMs`. While active, the lock's
 * connection is checked every `pollMs` (TCP keepalive on, each query with a time limit): a
 * connection that went silent counts as a lost lease, reported through `onLost`, because PostgreSQL
 * (or a failed-over primary) may already have let another process take over. A SQLite database
 * belongs to one process, which is always active.
 */
import type pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { loadPostgresClient } from './db.js';

export type GatewayRole = 'active' | 'standby';

export interface ActiveLease {
  readonly role: GatewayRole;
  /** Resolves once this process is active (at once on SQLite, or when it wins the lock). */
  whenActive(): Promise<void>;
  /** Releases the lock (or stops waiting for it). */
  close(): Promise<void>;
}

class AlwaysActive implements ActiveLease {
  readonly role = 'active' as const;
  whenActive(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

class AdvisoryLease implements ActiveLease {
  role: GatewayRole = 'standby';
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly databaseUrl: string,
    private readonly key: string,
    private readonly pollMs: number,
    private readonly log: FastifyBaseLogger,
    private readonly onLost: (error: Error) => void,
    private readonly rejoin: boolean,
  ) {}

  async start(): Promise<void> {
    if (!(await this.attempt())) {
      this.log.warn({ lock: this.key }, 'another gateway process is active on this database; standing by');
      this.schedule();
    }
  }

  whenActive(): Promise<void> {
    if (this.role === 'active') return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    // Ending the connection releases the lock.
    await client?.end().catch(() => undefined);
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      if (this.role === 'active') {
        this.heartbeat();
        return;
      }
      this.attempt()
        .then((won) => {
          if (!won) this.schedule();
        })
        .catch((error: unknown) => {
          this.log.warn({ err: error }, 'could not try the active-process lock; retrying');
          this.schedule();
        });
    }, this.pollMs);
    this.timer.unref();
  }

  private async attempt(): Promise<boolean> {
    if (this.closed) return false;
    let client = this.client;
    let won: boolean;
    try {
      if (!client) {
        const limit = Math.max(this.pollMs * 2, 5000);
        const { Client } = await loadPostgresClient();
        client = new Client({
          connectionString: this.databaseUrl,
          keepAlive: true,
          query_timeout: limit,
          connectionTimeoutMillis: limit,
          // Shows in pg_stat_activity which connection holds the lock.
          application_name: this.key,
        });
        const created = client;
        created.on('error', (error) => this.lost(error, created));
        this.client = client;
        await client.connect();
      }
      const result = await client.query<{ won: boolean }>('select pg_try_advisory_lock(hashtext($1)) as won', [this.key]);
      won = result.rows[0]?.won === true;
    } catch (error) {
      // A client whose connect failed emits no error and never connects again: the next try makes a
      // new one. Ending the connection also gives back a lock won by a query whose answer was lost.
      if (client && this.client === client) this.client = undefined;
      void client?.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      // close() ran meanwhile: ending the connection gives the lock back.
      await client.end().catch(() => undefined);
      return false;
    }
    if (!won) return false;
    this.role = 'active';
    this.log.info({ lock: this.key }, 'this gateway process is the active one for its database');
    for (const resolve of this.waiting.splice(0)) resolve();
    this.schedule();
    return true;
  }

  private heartbeat(): void {
    const client = this.client;
    if (!client) return;
    client.query('select 1').then(
      () => {
        if (this.client === client) this.schedule();
      },
      (error: unknown) => this.lost(error instanceof Error ? error : new Error(String(error)), client),
    );
  }

  /**
   * The lock's connection failed: a standby reconnects at its next try; an active process reports
   * it, and with `rejoin` (cluster mode: the lock only elects the leader) stands by to take it again.
   */
  private lost(error: Error, client: pg.Client): void {
    // An earlier connection's late error says nothing of the current one.
    if (this.closed || client !== this.client) return;
    this.client = undefined;
    void client.end().catch(() => undefined);
    if (this.role !== 'active') return;
    if (!this.rejoin) {
      this.log.fatal({ err: error }, 'lost the connection that holds the active-process lock');
      this.onLost(error);
      return;
    }
    this.role = 'standby';
    this.log.warn({ err: error, lock: this.key }, 'lost the connection that holds the leader lock; trying to take it again');
    this.onLost(error);
    // A heartbeat may be due: one timer only, now for the next try.
    clearTimeout(this.timer);
    this.schedule();
  }
}

/**
 * The lease for `databaseUrl`; on PostgreSQL one per schema (`public` when none is set). `onLost`
 * runs when an active process loses its lock connection: another process may be active already.
 * Without `rejoin` the caller must stop holding sessions (the gateway stops; main.ts exits); with it
 * (cluster mode, where the lock only elects the leader) the lease is a standby's again and
 * `whenActive` waits for the next win.
 */
export async function acquireActiveLease(
  databaseUrl: string,
  schema: string | undefined,
  pollMs: number,
  log: FastifyBaseLogger,
  onLost: (error: Error) => void,
  { rejoin = false }: { rejoin?: boolean } = {},
): Promise<ActiveLease> {
  if (databaseUrl.startsWith('sqlite:')) return new AlwaysActive();
  const lease = new AdvisoryLease(databaseUrl, `waygate:${schema ?? 'public'}`, pollMs, log, onLost, rejoin);
  await lease.start();
  return lease;
}
