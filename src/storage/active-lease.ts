/**
 * Which gateway process is the active one for a database. Only the active process holds instance
 * sessions and delivers the outbox: two processes doing both would open two sockets per WhatsApp
 * number (each kicking the other off) and deliver every event twice.
 *
 * On PostgreSQL the active process holds a session-level advisory lock on a connection of its own.
 * PostgreSQL releases it when that connection ends, so a crashed process hands over without any
 * expiry to wait for; the others stand by and try again every `pollMs`. A SQLite database belongs
 * to one process, which is always active.
 */
import pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';

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
    if (!this.client) {
      const client = new pg.Client({ connectionString: this.databaseUrl });
      // A lost lock connection means the lock is gone too: stop at once rather than run twice.
      client.on('error', (error) => this.lost(error));
      await client.connect();
      this.client = client;
    }
    const result = await this.client.query<{ won: boolean }>('select pg_try_advisory_lock(hashtext($1)) as won', [this.key]);
    if (!result.rows[0]?.won) return false;
    this.role = 'active';
    this.log.info({ lock: this.key }, 'this gateway process is the active one for its database');
    for (const resolve of this.waiting.splice(0)) resolve();
    return true;
  }

  private lost(error: Error): void {
    if (this.closed) return;
    if (this.role === 'active') {
      // Another process may take over now; holding sessions on would mean two sockets per number.
      this.log.fatal({ err: error }, 'lost the connection that holds the active-process lock; exiting');
      process.exit(1);
    }
    this.client = undefined;
  }
}

/** The lease for `databaseUrl`; on PostgreSQL one per schema (`public` when none is set). */
export async function acquireActiveLease(databaseUrl: string, schema: string | undefined, pollMs: number, log: FastifyBaseLogger): Promise<ActiveLease> {
  if (databaseUrl.startsWith('sqlite:')) return new AlwaysActive();
  const lease = new AdvisoryLease(databaseUrl, `waygate:${schema ?? 'public'}`, pollMs, log);
  await lease.start();
  return lease;
}
