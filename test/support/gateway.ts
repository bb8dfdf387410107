/** Starts a real gateway in-process on a free port, against SQLite or PostgreSQL, for end-to-end tests. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import WebSocket from 'ws';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { Clock } from '../../src/clock.js';
import { Writable } from 'node:stream';
import { loadConfig, type Config, type LogLevel } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { dropSchema } from '../../src/storage/db.js';
import { preferredNode } from '../../src/cluster/placement.js';

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export type DialectName = 'sqlite' | 'postgres';
export const DIALECTS: DialectName[] = ['sqlite', 'postgres'];

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestGateway extends Gateway {
  url: string;
  config: Config;
  dataDir: string;
  /** Calls the API: `key` goes in the `apikey` header; `body` is sent as JSON unless it is a string. */
  api<T = any>(
    method: string,
    route: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

export interface StartOptions {
  dialect?: DialectName;
  env?: Record<string, string>;
  clock?: Clock;
  sleep?: (ms: number) => Promise<void>;
  /** Reuse a data folder / PG schema (restart tests). */
  dataDir?: string;
  schema?: string;
  /** Keep the PG schema on stop (restart tests drop it themselves). */
  keepSchema?: boolean;
  /** Collect the gateway's log lines (the production logger, with its redaction) at this level. */
  logs?: { level: LogLevel; lines: string[] };
}

/**
 * Settings of one cluster (src/cluster/) for tests: a fresh secret and Redis prefix, a lease long
 * enough that a tick slowed by a loaded machine never lets the local deadline pass, a short tick.
 */
export function clusterEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    CLUSTER_SECRET: randomBytes(24).toString('base64url'),
    CLUSTER_LEASE_MS: '8000',
    CLUSTER_TICK_MS: '250',
    STANDBY_POLL_MS: '200',
    KV_STORE_URL: 'redis://127.0.0.1:6379',
    KV_STORE_PREFIX: `wgc${randomBytes(3).toString('hex')}:`,
    ...overrides,
  };
}

/** Gateways in cluster mode on one fresh PostgreSQL schema (`startCluster`). */
export interface TestCluster {
  gateways: TestGateway[];
  schema: string;
  /** Rows of a query on the cluster's database (write "${schema}".table). */
  query<T extends object>(text: string): Promise<T[]>;
  /** Which node holds each instance now (leases that have expired count as held by none). */
  owners(): Promise<Map<string, string>>;
  stop(): Promise<void>;
}

/** Starts `count` gateways in cluster mode on a fresh schema; resolves once all are members and one leads. */
export async function startCluster(count: number, env: Record<string, string> = clusterEnv()): Promise<TestCluster> {
  const schema = newSchemaName();
  const db = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const gateways: TestGateway[] = [];
  const query = async <T extends object>(text: string) => (await db.query<T>(text)).rows;
  const cluster: TestCluster = {
    gateways,
    schema,
    query,
    async owners() {
      const rows = await query<{ instance_id: string; owner: string }>(
        `select instance_id, owner from "${schema}".instance_leases where expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint`,
      );
      return new Map(rows.map((row) => [row.instance_id, row.owner]));
    },
    async stop() {
      for (const gw of gateways) await gw.stop().catch(() => undefined);
      await db.end();
      await dropSchema(PG_URL, schema);
    },
  };
  try {
    for (let i = 0; i < count; i += 1) gateways.push(await startGateway({ dialect: 'postgres', schema, keepSchema: true, env }));
    await waitFor(
      async () => {
        const [nodes] = await query<{ n: number; leaders: number }>(
          `select count(*)::int as n, count(*) filter (where leader)::int as leaders from "${schema}".cluster_nodes`,
        );
        return nodes!.n === count && nodes!.leaders === 1 ? true : undefined;
      },
      30_000,
      `${count} cluster members, one leading`,
    );
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

export function newSchemaName(): string {
  return `wg_t_${process.pid}_${randomBytes(4).toString('hex')}`;
}

export async function startGateway(options: StartOptions = {}): Promise<TestGateway> {
  const dialect = options.dialect ?? 'sqlite';
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-test-'));
  const schema = dialect === 'postgres' ? (options.schema ?? newSchemaName()) : undefined;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    GLOBAL_API_KEY: 'test-admin-key-0123456789',
    LOG_LEVEL: 'silent',
    ...(dialect === 'postgres' ? { DATABASE_URL: PG_URL } : {}),
    ...options.env,
  });
  const gateway = await createGateway(config, {
    logger: options.logs
      ? createLogger(
          options.logs.level,
          new Writable({ write: (chunk: Buffer, _encoding, done) => (options.logs!.lines.push(chunk.toString()), done()) }),
        )
      : pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
    ...(schema ? { storage: { schema, poolSize: 5 } } : {}),
  });
  const url = await gateway.listen();
  const api = httpApi(url);
  return Object.assign(gateway, {
    url,
    config,
    dataDir,
    api,
    async stop() {
      await gateway.close();
      if (schema && !options.keepSchema) await dropSchema(PG_URL, schema);
      if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  });
}

/** The `api` of a TestGateway for a gateway reached at `url` (another process, for instance). */
export function httpApi(url: string): TestGateway['api'] {
  return async (method, route, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key !== undefined) headers.apikey = opts.key;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${url}${route}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      /* not JSON: keep the text */
    }
    return { status: response.status, body: parsed as any, headers: response.headers };
  };
}

/** What creating and linking instances needs of a gateway: its API and admin key (any process will do). */
export type ApiTarget = Pick<TestGateway, 'api' | 'adminKey'>;

export interface TestInstance {
  id: string;
  name: string;
  token: string;
  webhookSecret: string;
  number?: string;
}

let counter = 0;
export function uniqueName(prefix = 'inst'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${randomBytes(2).toString('hex')}`;
}

export async function createInstance(gw: ApiTarget, body: Record<string, unknown> = {}): Promise<TestInstance> {
  const res = await gw.api('POST', '/api/v1/instance/create', {
    key: gw.adminKey,
    body: { instanceName: uniqueName(), network: 'sandbox', ...body },
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.instanceId, name: res.body.instanceName, token: res.body.token, webhookSecret: res.body.webhookSecret };
}

/**
 * Creates a sandbox instance and links it to `number` through connect + the sandbox scan route. In
 * cluster mode a new instance may move between processes meanwhile: as a client would, a 503
 * `instance_moving` is tried again, connect and scan both (a move drops the QR the previous owner showed).
 */
export async function connectedInstance(gw: ApiTarget, number: string, body: Record<string, unknown> = {}): Promise<TestInstance> {
  const instance = await createInstance(gw, body);
  let moved = false;
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const connect = await gw.api('POST', '/api/v1/instance/connect', { key: instance.token });
    if (connect.status === 200) {
      const scan = await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: instance.id, number } });
      if (scan.status === 200) return { ...instance, number };
      const retry = (scan.status === 503 && scan.body?.code === 'instance_moving') || (scan.status === 409 && moved);
      if (!retry) throw new Error(`scan failed: ${scan.status} ${JSON.stringify(scan.body)}`);
    } else if (connect.status !== 503 || connect.body?.code !== 'instance_moving') {
      throw new Error(`connect failed: ${connect.status} ${JSON.stringify(connect.body)}`);
    }
    moved = true;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`could not link ${instance.id}: it kept moving`);
}

/**
 * One connected instance held by each process of `cluster`, in the order of its gateways, each held
 * where the placement prefers it (waited for). Where an instance is first leased is not where it
 * stays: one the placement prefers on another process is handed over at a later tick, so the leases
 * read right after they are taken can show every new instance on one process.
 */
export async function instancesApart(cluster: TestCluster, tries = 16): Promise<TestInstance[]> {
  const nodes = cluster.gateways.map((gw) => gw.cluster!.node.nodeId);
  const byNode = new Map<string, TestInstance>();
  for (let i = 0; i < tries && byNode.size < nodes.length; i += 1) {
    const instance = await connectedInstance(cluster.gateways[i % nodes.length]!, uniqueNumber());
    const node = preferredNode(instance.id, nodes)!;
    if (!byNode.has(node)) byNode.set(node, instance);
  }
  if (byNode.size < nodes.length) throw new Error(`the placement preferred fewer than ${nodes.length} processes for ${tries} instances`);
  await waitFor(
    async () => {
      const owners = await cluster.owners();
      return [...byNode].every(([node, instance]) => owners.get(instance.id) === node) || undefined;
    },
    15_000,
    'each instance held where the placement prefers it',
  );
  return nodes.map((node) => byNode.get(node)!);
}

let numberSeq = 0;
/** A phone number unique within this test process. */
export function uniqueNumber(): string {
  numberSeq += 1;
  return `55${String(process.pid % 100000).padStart(5, '0')}${String(numberSeq).padStart(4, '0')}`;
}

/** Polls until `check` returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(check: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface RecordedEvents {
  all: any[];
  of(instanceId: string, type?: string): any[];
  /** Waits for an event of the instance (and type) matching `match`. */
  next(instanceId: string, type: string, match?: (event: any) => boolean, timeoutMs?: number): Promise<any>;
}

/** Records every event the gateway stores (the envelope as the sinks send it). */
export function recordEvents(gw: TestGateway): RecordedEvents {
  const all: any[] = [];
  gw.bus.onStored((entry) => all.push(JSON.parse(entry.body)));
  const of = (instanceId: string, type?: string) => all.filter((e) => e.instanceId === instanceId && (!type || e.event === type));
  return {
    all,
    of,
    next: (instanceId, type, match = () => true, timeoutMs = 10_000) =>
      waitFor(() => of(instanceId, type).find(match), timeoutMs, `${type} event of ${instanceId}`),
  };
}

/**
 * Opens a WebSocket to `url` that the gateway is expected to refuse before the upgrade; answers the
 * HTTP status and JSON body of the refusal (fails when the upgrade succeeds instead).
 */
export function refusedUpgrade(url: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.on('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
      });
    });
    socket.on('open', () => {
      socket.close();
      reject(new Error(`the upgrade to ${url.split('?')[0]} was accepted`));
    });
    socket.on('error', () => undefined);
  });
}
