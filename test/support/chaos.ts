/**
 * The parts of the chaos tests (test/chaos.test.ts, test/chaos-environment.test.ts): the gateway as a
 * child process under load (sends of text and media, messages from contacts), a webhook receiver that
 * misbehaves, and the count of what the gateway acknowledged against what reached the receiver and
 * the Redis stream.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { waitFor } from './gateway.js';
import { freePort, spawnGateway, type GatewayProcess } from './process.js';

const ADMIN = `chaos-admin-${randomBytes(8).toString('hex')}`;
export const REDIS_URL = 'redis://127.0.0.1:6379';
/** Load workers at once. */
const WORKERS = 6;

/** What the run counted; printed at the end of each scenario. */
export interface Tally {
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
export class ChaoticReceiver {
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
        setTimeout(() => res.writeHead(200).end('late'), 1_000).unref();
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
export async function call(
  url: string,
  method: string,
  route: string,
  body?: unknown,
  key = ADMIN,
): Promise<{ status: number; body: any }> {
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

export interface Instance {
  id: string;
  token: string;
  number: string;
}

/** One gateway deployment (data folder or PG schema) that survives its processes. */
export class Deployment {
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
      // Backoff capped as in cluster-process.test.ts: an event that fails a few times in a row (one
      // request in five fails) waits half a second at most, not up to the default minute.
      WEBHOOK_RETRY_MAX_MS: '500',
      // Each timed-out request stalls its instance's lane (per-instance order) for this long; half a
      // second is far above the receiver's own answers and keeps the settle phase short.
      WEBHOOK_TIMEOUT_MS: '500',
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
export async function pair(deployment: Deployment, receiver: ChaoticReceiver): Promise<[Instance, Instance]> {
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
export class Ledger {
  readonly expected = new Set<string>();

  add(event: string, keyId: string | undefined): void {
    if (keyId) this.expected.add(`${event} ${keyId}`);
  }
}

/**
 * Drives the load until `stop` says so: contacts texting A, A sending text and small pictures to B.
 * Only answers with 2xx are acknowledged; anything else (the process died, it is restarting) is not.
 */
export async function load(deployment: Deployment, a: Instance, b: Instance, ledger: Ledger, png: string, stop: () => boolean) {
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
export async function settle(
  receiver: ChaoticReceiver,
  redis: Redis,
  prefix: string,
  ledger: Ledger,
): Promise<{ webhook: Tally; stream: Tally }> {
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
  /** One channel's account: `lost` of the acknowledged messages never arrived; `copies` per arrival. */
  const channel = (lost: number, copies: number[]) => ({
    acknowledged: ledger.expected.size,
    delivered: ledger.expected.size - lost,
    lost,
    duplicates: copies.reduce((sum, n) => sum + Math.max(0, n - 1), 0),
    maxCopies: Math.max(0, ...copies),
  });
  return { webhook: channel(last.web.length, copies), stream: channel(last.str.length, streamCopies) };
}
