/**
 * Chaos: the gateway as a child process, killed with SIGKILL at random moments while it takes
 * sends (text and media), receives messages (text from contacts, media from another instance), and
 * delivers to a webhook receiver that answers 5xx, times out and resets connections, and to the
 * Redis stream; on SQLite and PostgreSQL. Then a private PostgreSQL restarted under load, and a
 * media folder that runs out of space. Counted: events lost (must be 0) and duplicates (reported,
 * bounded). CHAOS_ROUNDS kills per database (default 2 in the test command; `npm run chaos` runs 12).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../src/storage/db.js';
import { newSchemaName, PG_URL, waitFor, type DialectName } from './support/gateway.js';
import { makeSamples } from './support/media.js';
import { freePort, spawnGateway, type GatewayProcess } from './support/process.js';

const ROUNDS = Number(process.env.CHAOS_ROUNDS ?? 2);
const ADMIN = `chaos-admin-${randomBytes(8).toString('hex')}`;
const REDIS_URL = 'redis://127.0.0.1:6379';
/** Load workers at once. */
const WORKERS = 6;

/** What the run counted; printed at the end of each scenario. */
interface Tally {
  acknowledged: number;
  delivered: number;
  lost: number;
  duplicates: number;
  maxCopies: number;
}

/**
 * A webhook receiver that misbehaves: most requests get 200, others a 500, an answer after the
 * gateway's timeout, or a reset connection. Only events answered with 2xx count as delivered.
 */
class ChaoticReceiver {
  /** eventId -> times answered 2xx */
  readonly copies = new Map<string, number>();
  /** `${event} ${key.id}` -> eventIds */
  readonly byMessage = new Map<string, Set<string>>();
  faults = { serverError: 0, timeout: 0, reset: 0 };
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const roll = Math.random();
      if (roll < 0.08) {
        this.faults.reset += 1;
        req.socket.destroy();
        return;
      }
      if (roll < 0.16) {
        this.faults.serverError += 1;
        res.writeHead(503).end('busy');
        return;
      }
      if (roll < 0.2) {
        // Past WEBHOOK_TIMEOUT_MS: the gateway gives up on this attempt and sends it again.
        this.faults.timeout += 1;
        setTimeout(() => res.writeHead(200).end('late'), 1_500).unref();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const envelope of Array.isArray(body) ? body : [body]) this.record(envelope);
      res.writeHead(200).end('ok');
    });
  });

  private record(envelope: any): void {
    this.copies.set(envelope.eventId, (this.copies.get(envelope.eventId) ?? 0) + 1);
    const id = `${envelope.event} ${envelope.data?.key?.id}`;
    const ids = this.byMessage.get(id) ?? new Set<string>();
    ids.add(envelope.eventId);
    this.byMessage.set(id, ids);
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Calls a gateway process; a refused connection (the process is down) answers status 0. */
async function call(url: string, method: string, route: string, body?: unknown, key = ADMIN): Promise<{ status: number; body: any }> {
  try {
    const res = await fetch(`${url}${route}`, {
      method,
      headers: { apikey: key, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  } catch {
    return { status: 0, body: undefined };
  }
}

interface Instance {
  id: string;
  token: string;
  number: string;
}

/** One gateway deployment (data folder or PG schema) that survives its processes. */
class Deployment {
  gateway: GatewayProcess | undefined;
  port = 0;
  readonly prefix = `chaos${randomBytes(4).toString('hex')}:`;
  readonly env: Record<string, string>;

  constructor(
    readonly dataDir: string,
    database: Record<string, string>,
  ) {
    this.env = {
      DATA_DIR: dataDir,
      GLOBAL_API_KEY: ADMIN,
      RATE_LIMIT_PER_IP: '10000000',
      RATE_LIMIT_PER_KEY: '10000000',
      WEBHOOK_RETRY_BASE_MS: '50',
      WEBHOOK_TIMEOUT_MS: '1000',
      // The receiver fails one request in five on purpose: with the default 5 attempts about one
      // event in 3,000 would (correctly) become a dead letter; here every event must get through.
      WEBHOOK_MAX_ATTEMPTS: '100',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      CHANNEL_RETRY_BASE_MS: '50',
      KV_STORE_URL: REDIS_URL,
      KV_STORE_GLOBAL_EVENTS: 'true',
      KV_STORE_PREFIX: this.prefix,
      KV_STORE_STREAM_MAXLEN: '1000000',
      SANDBOX_RECONNECT_DELAY_MS: '0',
      ...database,
    };
  }

  get url(): string {
    return this.gateway!.url;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    this.gateway = await spawnGateway(this.env, this.port);
  }

  async kill(): Promise<void> {
    this.supervising = false;
    await this.gateway?.kill('SIGKILL');
  }

  /** Process exits seen by `supervise()`. */
  exits = 0;
  private supervising = false;

  /**
   * What systemd's Restart=always does: when the process exits (it does so on purpose when it loses
   * the connection holding its database lock, README "standby"), start it again until it listens.
   */
  supervise(): void {
    this.supervising = true;
    const watch = async () => {
      while (this.supervising) {
        const child = this.gateway!.child;
        if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
        if (!this.supervising) return;
        this.exits += 1;
        while (this.supervising) {
          try {
            await this.start();
            break;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
        // Stopped while a restart was under way: that process is the test's last, stop it too.
        if (!this.supervising) await this.gateway?.kill('SIGKILL');
      }
    };
    void watch();
  }
}

/** Creates two connected sandbox instances with the receiver as their webhook. */
async function pair(deployment: Deployment, receiver: ChaoticReceiver): Promise<[Instance, Instance]> {
  const made: Instance[] = [];
  for (const name of ['a', 'b']) {
    const number = `5511${String(Math.floor(Math.random() * 1e9)).padStart(9, '0')}`;
    const created = await call(deployment.url, 'POST', '/api/v1/instance/create', {
      instanceName: `chaos-${name}-${randomBytes(3).toString('hex')}`,
      network: 'sandbox',
      webhookUrl: receiver.url,
      webhookEvents: ['MESSAGE', 'SEND_MESSAGE'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const instance = { id: created.body.instanceId, token: created.body.token, number };
    expect((await call(deployment.url, 'POST', '/api/v1/instance/connect', undefined, instance.token)).status).toBe(200);
    expect((await call(deployment.url, 'POST', '/api/v1/sandbox/scan', { instanceId: instance.id, number })).status).toBe(200);
    made.push(instance);
  }
  return made as [Instance, Instance];
}

/** Events the gateway acknowledged (a 2xx to the request that made them), by `${event} ${key.id}`. */
class Ledger {
  readonly expected = new Set<string>();

  add(event: string, keyId: string | undefined): void {
    if (keyId) this.expected.add(`${event} ${keyId}`);
  }
}

/**
 * Drives the load until `stop` says so: contacts texting A, A sending text and small pictures to B.
 * Only answers with 2xx are acknowledged; anything else (the process died, it is restarting) is not.
 */
async function load(deployment: Deployment, a: Instance, b: Instance, ledger: Ledger, png: string, stop: () => boolean) {
  const statuses = new Map<number, number>();
  const worker = async () => {
    while (!stop()) {
      const roll = Math.random();
      let res: { status: number; body: any };
      if (roll < 0.4) {
        res = await call(deployment.url, 'POST', '/api/v1/sandbox/messages', { from: '5511900000777', to: a.number, text: 'chaos in' });
        if (res.status === 200) ledger.add('MESSAGE', res.body.key.id);
      } else if (roll < 0.8) {
        res = await call(deployment.url, 'POST', '/api/v1/send/text', { number: b.number, text: 'chaos out' }, a.token);
        if (res.status === 200) ledger.add('SEND_MESSAGE', res.body.key.id);
      } else {
        res = await call(deployment.url, 'POST', '/api/v1/send/media', { number: b.number, media: { base64: png } }, a.token);
        if (res.status === 200) ledger.add('SEND_MESSAGE', res.body.key.id);
      }
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  return statuses;
}

/** eventIds of the Redis stream entries (one per entry), by `${event} ${key.id}`. */
async function streamEvents(redis: Redis, prefix: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  let start = '-';
  for (;;) {
    const entries = await redis.xrange(`${prefix}events:stream`, start, '+', 'COUNT', 5000);
    for (const [id, fields] of entries) {
      const record: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) record[fields[i]!] = fields[i + 1]!;
      const body = JSON.parse(record.body ?? '{}');
      const key = `${record.event} ${body.data?.key?.id}`;
      found.set(key, [...(found.get(key) ?? []), record.eventId!]);
      start = `(${id}`;
    }
    if (entries.length < 5000) return found;
  }
}

/** Waits until every acknowledged event reached the receiver and the stream; then counts. */
async function settle(receiver: ChaoticReceiver, redis: Redis, prefix: string, ledger: Ledger): Promise<{ webhook: Tally; stream: Tally }> {
  const missing = async () => {
    const stream = await streamEvents(redis, prefix);
    const web = [...ledger.expected].filter((k) => !receiver.byMessage.has(k));
    const str = [...ledger.expected].filter((k) => !stream.has(k));
    return { web, str, stream };
  };
  let last = await missing();
  try {
    await waitFor(
      async () => {
        last = await missing();
        return last.web.length === 0 && last.str.length === 0 ? true : undefined;
      },
      // One lane per instance delivers in order, and the receiver stalls a few percent of requests
      // past the webhook timeout: a long run's backlog needs time in proportion to its size.
      90_000 + 100 * ledger.expected.size,
      'every acknowledged event on the webhook and the Redis stream',
    );
  } catch {
    // Counted below: the assertion on `lost` names what is missing.
  }
  const webIds = new Set([...ledger.expected].flatMap((k) => [...(receiver.byMessage.get(k) ?? [])]));
  const copies = [...webIds].map((id) => receiver.copies.get(id) ?? 0);
  const streamCopies = [...ledger.expected].map((k) => last.stream.get(k)?.length ?? 0);
  return {
    webhook: {
      acknowledged: ledger.expected.size,
      delivered: ledger.expected.size - last.web.length,
      lost: last.web.length,
      duplicates: copies.reduce((sum, n) => sum + Math.max(0, n - 1), 0),
      maxCopies: Math.max(0, ...copies),
    },
    stream: {
      acknowledged: ledger.expected.size,
      delivered: ledger.expected.size - last.str.length,
      lost: last.str.length,
      duplicates: streamCopies.reduce((sum, n) => sum + Math.max(0, n - 1), 0),
      maxCopies: Math.max(0, ...streamCopies),
    },
  };
}

function databaseOf(dialect: DialectName, schema: string): Record<string, string> {
  return dialect === 'postgres' ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema } : {};
}

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.each<DialectName>(['sqlite', 'postgres'])('chaos on %s', (dialect) => {
  it(`loses no acknowledged event over ${ROUNDS} SIGKILLs at random moments`, { timeout: 180_000 + ROUNDS * 75_000 }, async () => {
    const receiver = new ChaoticReceiver();
    await receiver.start();
    const redis = new Redis(REDIS_URL);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-'));
    const schema = newSchemaName();
    const deployment = new Deployment(dataDir, databaseOf(dialect, schema));
    cleanups.push(async () => {
      await deployment.kill();
      await receiver.stop();
      await redis.del(`${deployment.prefix}events:stream`);
      redis.disconnect();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const png = (await makeSamples()).png.toString('base64');
    await deployment.start();
    const [a, b] = await pair(deployment, receiver);
    const ledger = new Ledger();
    const statuses = new Map<number, number>();
    for (let round = 0; round < ROUNDS; round += 1) {
      // A random moment: after some acknowledged work, within a second and a half of load.
      const killAt = Date.now() + 300 + Math.random() * 1_200;
      const before = ledger.expected.size;
      let killed = false;
      const running = load(deployment, a, b, ledger, png, () => killed);
      await waitFor(() => (Date.now() >= killAt && ledger.expected.size > before ? true : undefined), 30_000, 'load before the kill');
      await deployment.kill();
      killed = true;
      for (const [status, count] of await running) statuses.set(status, (statuses.get(status) ?? 0) + count);
      await deployment.start();
    }
    // A last stretch of load on the restarted process, then everything must arrive.
    let done = false;
    const tail = load(deployment, a, b, ledger, png, () => done);
    await waitFor(() => (ledger.expected.size > 0 ? true : undefined), 10_000, 'load after the last restart');
    done = true;
    await tail;
    const { webhook, stream } = await settle(receiver, redis, deployment.prefix, ledger);
    console.log(
      `chaos ${dialect}: ${ROUNDS} kills, ${ledger.expected.size} acknowledged events; ` +
        `webhook delivered ${webhook.delivered}, lost ${webhook.lost}, duplicates ${webhook.duplicates} (max ${webhook.maxCopies} copies); ` +
        `redis stream delivered ${stream.delivered}, lost ${stream.lost}, max ${stream.maxCopies} entries per event; ` +
        `receiver faults ${JSON.stringify(receiver.faults)}; answers ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(statuses.get(500) ?? 0, 'no 500 answers').toBe(0);
    expect(webhook.lost).toBe(0);
    expect(stream.lost).toBe(0);
    // At least once, not unboundedly often: a kill or a receiver fault may repeat an event a few times.
    expect(webhook.maxCopies).toBeLessThanOrEqual(ROUNDS + 8);
    expect(webhook.duplicates).toBeLessThanOrEqual(webhook.acknowledged);
    expect(stream.maxCopies).toBeLessThanOrEqual(ROUNDS + 8);
    // One event, one eventId: a redelivered event carries its first eventId.
    for (const key of ledger.expected) expect(receiver.byMessage.get(key)?.size, key).toBe(1);
  });
});

/** A PostgreSQL of this test's own (its own data folder and port), which the test may restart. */
class PrivatePostgres {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-pg-'));
  port = 0;
  private readonly bin = `/usr/lib/postgresql/${fs.readdirSync('/usr/lib/postgresql').sort().at(-1)}/bin`;

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Runs a server program as the postgres user (the server refuses to run as root). */
  private run(program: string, args: string[]): void {
    const quoted = [`${this.bin}/${program}`, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', quoted], { stdio: 'pipe' });
  }

  async init(): Promise<void> {
    this.port = await freePort();
    execFileSync('chown', ['postgres:postgres', this.root]);
    this.run('initdb', ['-D', `${this.root}/data`, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    this.start();
  }

  start(): void {
    this.run('pg_ctl', [
      '-D',
      `${this.root}/data`,
      '-l',
      `${this.root}/log`,
      '-w',
      '-o',
      `-p ${this.port} -k ${this.root} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  stop(): void {
    this.run('pg_ctl', ['-D', `${this.root}/data`, '-m', 'fast', '-w', 'stop']);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

describe('chaos: the environment fails', () => {
  it(
    'a PostgreSQL restarted under load: refused cleanly meanwhile, served again after, nothing acknowledged lost',
    { timeout: 180_000 },
    async () => {
      const postgres = new PrivatePostgres();
      const receiver = new ChaoticReceiver();
      const redis = new Redis(REDIS_URL);
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-'));
      const deployment = new Deployment(dataDir, {});
      cleanups.push(async () => {
        await deployment.kill();
        await receiver.stop();
        await redis.del(`${deployment.prefix}events:stream`);
        redis.disconnect();
        postgres.destroy();
        fs.rmSync(dataDir, { recursive: true, force: true });
      });
      await postgres.init();
      deployment.env.DATABASE_URL = postgres.url;
      await receiver.start();
      const png = (await makeSamples()).png.toString('base64');
      await deployment.start();
      deployment.supervise();
      const [a, b] = await pair(deployment, receiver);
      const ledger = new Ledger();

      let stopped = false;
      const running = load(deployment, a, b, ledger, png, () => stopped);
      await waitFor(() => (ledger.expected.size >= 50 ? true : undefined), 30_000, 'load before the restart');
      postgres.stop();
      const duringOutage = ledger.expected.size;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      postgres.start();
      // Back to work once the database is back (through a restarted process when it stepped down).
      await waitFor(() => (ledger.expected.size >= duringOutage + 50 ? true : undefined), 90_000, 'acknowledged sends after the restart');
      stopped = true;
      const statuses = await running;

      const { webhook, stream } = await settle(receiver, redis, deployment.prefix, ledger);
      console.log(
        `chaos postgres restart: ${ledger.expected.size} acknowledged; process exits ${deployment.exits}; ` +
          `webhook lost ${webhook.lost}, duplicates ${webhook.duplicates}; stream lost ${stream.lost}; ` +
          `answers ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
      // While the database was away requests were refused (503, or no process listening), never a 500.
      expect(statuses.get(500) ?? 0).toBe(0);
      expect(webhook.lost).toBe(0);
      expect(stream.lost).toBe(0);
    },
  );

  it(
    'the media folder runs out of space: sends and events go on, files that did not fit are 404, later ones are kept again',
    { timeout: 120_000 },
    async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-'));
      const mediaDir = path.join(dataDir, 'media');
      fs.mkdirSync(mediaDir);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mediaDir]);
      const receiver = new ChaoticReceiver();
      const redis = new Redis(REDIS_URL);
      const deployment = new Deployment(dataDir, {});
      cleanups.push(async () => {
        await deployment.kill();
        await receiver.stop();
        await redis.del(`${deployment.prefix}events:stream`);
        redis.disconnect();
        execFileSync('umount', [mediaDir]);
        fs.rmSync(dataDir, { recursive: true, force: true });
      });
      await receiver.start();
      await deployment.start();
      const [a, b] = await pair(deployment, receiver);
      // 40 pictures of ~55 KB: the 256 KB folder holds about four copies (sender's and recipient's).
      const picture = Buffer.concat([(await makeSamples()).png, randomBytes(55_000)]);
      const ledger = new Ledger();
      const sent: string[] = [];
      for (let i = 0; i < 40; i += 1) {
        const res = await call(
          deployment.url,
          'POST',
          '/api/v1/send/media',
          { number: b.number, media: { base64: picture.toString('base64') } },
          a.token,
        );
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        ledger.add('SEND_MESSAGE', res.body.key.id);
        sent.push(res.body.key.id);
      }
      const text = await call(deployment.url, 'POST', '/api/v1/send/text', { number: b.number, text: 'still here' }, a.token);
      expect(text.status).toBe(200);
      ledger.add('SEND_MESSAGE', text.body.key.id);
      const { webhook, stream } = await settle(receiver, redis, deployment.prefix, ledger);
      expect(webhook.lost).toBe(0);
      expect(stream.lost).toBe(0);

      const downloads = new Map<number, number>();
      for (const id of sent) {
        const res = await fetch(`${deployment.url}/api/v1/message/download/${id}`, { headers: { apikey: a.token } });
        await res.arrayBuffer();
        downloads.set(res.status, (downloads.get(res.status) ?? 0) + 1);
      }
      console.log(
        `chaos media folder full: 40 sends answered 200, 0 events lost; downloads ${JSON.stringify(Object.fromEntries(downloads))}`,
      );
      expect(downloads.get(200) ?? 0, 'the first pictures were kept').toBeGreaterThan(0);
      expect(downloads.get(404) ?? 0, 'the ones that did not fit are unknown, not a server error').toBeGreaterThan(0);
      expect([...downloads.keys()].every((status) => status === 200 || status === 404)).toBe(true);
      expect((await call(deployment.url, 'GET', '/api/v1/server/ok')).status).toBe(200);

      // Room again: the next picture is kept and served.
      execFileSync('mount', ['-o', 'remount,size=8m', mediaDir]);
      const again = await call(
        deployment.url,
        'POST',
        '/api/v1/send/media',
        { number: b.number, media: { base64: picture.toString('base64') } },
        a.token,
      );
      expect(again.status).toBe(200);
      await waitFor(
        async () => {
          const res = await fetch(`${deployment.url}/api/v1/message/download/${again.body.key.id}`, { headers: { apikey: a.token } });
          const bytes = Buffer.from(await res.arrayBuffer());
          return res.status === 200 && bytes.equals(picture) ? true : undefined;
        },
        15_000,
        'the picture sent once there was room',
      );
    },
  );
});
