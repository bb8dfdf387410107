/**
 * Private broker processes for the event-channel tests (a redis-server, nats-server or mosquitto of
 * their own on a free port, so stopping one never disturbs other tests), a TCP proxy that stands in
 * for an unreachable RabbitMQ, and the checks every channel's burst test shares.
 *
 * A missing binary fails the test (spawn error), never skips it. Every process started here is
 * killed when the test file's process exits, even if a test forgot to stop it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { dropSchema } from '../../src/storage/db.js';
import { newSchemaName, PG_URL, startGateway, waitFor, type TestGateway } from './gateway.js';
import { freePort } from './process.js';

export { freePort };

/** Short channel retry and publish timeouts, so a stopped broker is noticed and retried quickly. */
export const FAST_RETRY = { CHANNEL_RETRY_BASE_MS: '100', CHANNEL_RETRY_MAX_MS: '1000', CHANNEL_PUBLISH_TIMEOUT_MS: '2000' };

/** A channel name prefix of this test run only (letters and digits: valid for every broker). */
export function uniquePrefix(): string {
  return `wgt${process.pid}${randomBytes(3).toString('hex')}`;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** One broker server process that can be stopped and started again on the same port and data folder. */
export class BrokerProcess {
  readonly dir: string;
  private child: ChildProcess | undefined;
  private readonly output: string[] = [];

  constructor(
    readonly label: string,
    readonly port: number,
    private readonly command: string,
    private readonly args: (dir: string) => string[],
  ) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `waygate-${label}-`));
  }

  get url(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** The lines the server has written so far (all its runs), those matching `pattern` only if given. */
  logLines(pattern?: RegExp): string[] {
    const lines = this.output.join('').split('\n');
    return pattern ? lines.filter((line) => pattern.test(line)) : lines;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const child = spawn(this.command, this.args(this.dir), { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => this.output.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => this.output.push(d.toString()));
    let failure: Error | undefined;
    child.once('error', (error) => {
      failure = error;
    });
    child.once('exit', () => {
      running.delete(child);
      if (this.child === child) this.child = undefined;
    });
    await waitFor(
      async () => {
        if (failure) throw new Error(`${this.label} could not start (${this.command}): ${failure.message}`);
        if (child.exitCode !== null) throw new Error(`${this.label} exited at start: ${this.output.join('')}`);
        return (await portOpen(this.port)) ? true : undefined;
      },
      20_000,
      `${this.label} to listen on ${this.port}`,
    );
  }

  /** Stops the server (SIGTERM: it shuts down as a service manager would stop it) and waits for its exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }

  async dispose(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** redis-server with an append-only file synced on every write, so a restart keeps the stream. */
export async function privateRedis(port?: number): Promise<BrokerProcess> {
  const p = port ?? (await freePort());
  return new BrokerProcess('redis', p, 'redis-server', (dir) => [
    '--port',
    String(p),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--dir',
    dir,
  ]);
}

/** nats-server, with JetStream and its own store folder unless `jetstream` is false. */
export async function privateNats(options: { port?: number; jetstream?: boolean; args?: string[] } = {}): Promise<BrokerProcess> {
  const p = options.port ?? (await freePort());
  return new BrokerProcess('nats', p, 'nats-server', (dir) => [
    '-a',
    '127.0.0.1',
    '-p',
    String(p),
    ...(options.jetstream === false ? [] : ['-js', '-sd', dir]),
    ...(options.args ?? []),
  ]);
}

/** mosquitto with persistence (sessions and queued QoS 1 messages survive a restart). */
export async function privateMosquitto(port?: number): Promise<BrokerProcess> {
  const p = port ?? (await freePort());
  return new BrokerProcess('mosquitto', p, 'mosquitto', (dir) => {
    const config = path.join(dir, 'mosquitto.conf');
    fs.writeFileSync(
      config,
      [
        `listener ${p} 127.0.0.1`,
        'allow_anonymous true',
        // Started as root, mosquitto switches to the user "mosquitto", which cannot write this
        // root-owned folder: every save fails and a restart forgets all sessions. Stay who we are.
        `user ${os.userInfo().username}`,
        'persistence true',
        `persistence_location ${dir}/`,
        'max_queued_messages 0',
        'max_inflight_messages 100',
        // Every packet, so a failed delivery test can show what the broker did (drops, PUBACK reason codes).
        'log_dest stderr',
        'log_type all',
        '',
      ].join('\n'),
    );
    return ['-c', config];
  });
}

/**
 * A TCP relay to `target` that listens only when told to: the gateway can start against its port
 * while "nothing is there" (wrong URL), and later find the real server behind it.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    readonly port: number,
    private readonly target: number,
  ) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect({ port: this.target, host: '127.0.0.1' });
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const run = promisify(execFile);

/** Closes, from the server side, every RabbitMQ connection whose client-given name contains `marker`. */
export async function closeRabbitConnections(marker: string, reason = 'closed by test'): Promise<number> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_connections', '--no-table-headers', 'pid', 'client_properties']);
  const pids = stdout
    .split('\n')
    .filter((line) => line.includes(`{"connection_name","`) && line.includes(marker))
    .map((line) => line.split('\t')[0]!.trim());
  for (const pid of pids) await run('rabbitmqctl', ['-q', 'close_connection', pid, reason]);
  return pids.length;
}

/** Publishes `total` MESSAGE events spread round-robin over the instances (`data.n` counts per instance), `chunk` at a time. */
export async function publishBurst(
  gw: TestGateway,
  instanceIds: string[],
  total: number,
  options: { chunk?: number; gapMs?: number } = {},
): Promise<void> {
  const { chunk = 25, gapMs = 0 } = options;
  const next = new Map(instanceIds.map((id) => [id, 0]));
  for (let start = 0; start < total; start += chunk) {
    const batch: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(total, start + chunk); i++) {
      const instanceId = instanceIds[i % instanceIds.length]!;
      const n = next.get(instanceId)!;
      next.set(instanceId, n + 1);
      batch.push(
        gw.bus.publish(instanceId, {
          type: 'MESSAGE',
          data: {
            key: { remoteJid: 'burst@s.whatsapp.net', fromMe: false, id: `burst-${n}` },
            message: { conversation: `burst ${n}` },
            messageTimestamp: 0,
            n,
            text: `burst ${n}`,
          },
        }),
      );
    }
    await Promise.all(batch);
    // A paced burst keeps events coming while the test breaks the broker.
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
}

interface ReceivedEnvelope {
  eventId: string;
  instanceId: string;
  event: string;
  data: { n: number };
}

/** Distinct events received so far (by instance and n). */
export function distinctCount(received: ReceivedEnvelope[]): number {
  return new Set(received.map((e) => `${e.instanceId}:${e.data.n}`)).size;
}

/**
 * The at-least-once contract after a failure: every event of every instance arrived, the first copy
 * of each came in per-instance order, and every copy of one event carries the same eventId.
 */
export function expectEveryEventInOrder(received: ReceivedEnvelope[], perInstance: Map<string, number>): { duplicates: number } {
  const byInstance = new Map<string, number[]>();
  const idsOf = new Map<string, Set<string>>();
  for (const envelope of received) {
    const key = `${envelope.instanceId}:${envelope.data.n}`;
    let ids = idsOf.get(key);
    if (!ids) {
      ids = new Set();
      idsOf.set(key, ids);
      // First copy of this event: it must follow the previous event of the same instance.
      const list = byInstance.get(envelope.instanceId) ?? [];
      list.push(envelope.data.n);
      byInstance.set(envelope.instanceId, list);
    }
    ids.add(envelope.eventId);
  }
  for (const [instanceId, count] of perInstance) {
    expect(byInstance.get(instanceId), `events of ${instanceId}`).toEqual(Array.from({ length: count }, (_, n) => n));
  }
  for (const [key, ids] of idsOf) expect(ids.size, `copies of ${key} share one eventId`).toBe(1);
  const total = [...perInstance.values()].reduce((a, b) => a + b, 0);
  return { duplicates: received.length - total };
}

/** Pending outbox rows of one sink (0 once the broker confirmed everything). */
export async function pendingFor(gw: TestGateway, sink: string): Promise<{ rows: number; maxAttempts: number }> {
  const row = await gw.storage.db
    .selectFrom('outbox_pending')
    .select((eb) => [eb.fn.countAll().as('rows'), eb.fn.max('attempts').as('maxAttempts')])
    .where('sink', '=', sink)
    .executeTakeFirstOrThrow();
  return { rows: Number(row.rows), maxAttempts: Number(row.maxAttempts ?? 0) };
}

/** The channel's entry in GET /api/v1/server/ok. */
export async function channelHealth(gw: TestGateway, channel: string): Promise<{ up: boolean; detail?: string } | undefined> {
  const res = await gw.api('GET', '/api/v1/server/ok');
  return res.status === 200 ? res.body.channels[channel] : undefined;
}

/** Starts two gateways on one PostgreSQL schema with the channel settings `env` and checks the relay between them. */
export async function expectRelayAcrossProcesses(env: Record<string, string>): Promise<void> {
  const schema = newSchemaName();
  const owner = await startGateway({ dialect: 'postgres', schema, keepSchema: true, env });
  const other = await startGateway({ dialect: 'postgres', schema, keepSchema: true, env });
  try {
    await expectRelayBetween(owner, other);
  } finally {
    await other.stop();
    await owner.stop();
    await dropSchema(PG_URL, schema);
  }
}

/**
 * Two gateway processes sharing one database: a WebSocket client on each, for an instance created on
 * `owner`. Events recorded by `owner` must reach both clients once each, in order. The relay is
 * best-effort and subscribes asynchronously, so probe events go first until `other` relays them.
 */
async function expectRelayBetween(owner: TestGateway, other: TestGateway): Promise<void> {
  const res = await owner.api('POST', '/api/v1/instance/create', {
    key: owner.adminKey,
    body: { instanceName: `relay-${process.pid}-${Math.random().toString(36).slice(2, 8)}`, network: 'sandbox' },
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status}`);
  const { instanceId, token } = res.body as { instanceId: string; token: string };
  const sockets: WebSocket[] = [];
  const listen = (gw: TestGateway) => {
    const socket = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/ws?token=${token}&instanceId=${instanceId}`);
    sockets.push(socket);
    const messages: any[] = [];
    socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8'))));
    socket.on('error', () => undefined);
    return messages;
  };
  try {
    const onOwner = listen(owner);
    const onOther = listen(other);
    await waitFor(
      () => (owner.hub.count(instanceId) === 1 && other.hub.count(instanceId) === 1 ? true : undefined),
      10_000,
      'both clients subscribed',
    );
    await waitFor(
      async () => {
        await owner.bus.publish(instanceId, { type: 'PRESENCE', data: { id: 'probe@s.whatsapp.net', presence: 'available', probe: true } });
        await new Promise((resolve) => setTimeout(resolve, 100));
        return onOther.some((e) => e.event === 'PRESENCE') ? true : undefined;
      },
      20_000,
      'the relay to carry a probe event',
    );

    await publishBurst(owner, [instanceId], 30);
    const messagesOf = (list: any[]) => list.filter((e) => e.event === 'MESSAGE');
    await waitFor(
      () => (messagesOf(onOther).length >= 30 && messagesOf(onOwner).length >= 30 ? true : undefined),
      15_000,
      'events on both processes',
    );
    // Let a stray copy arrive before counting: each client must see each event exactly once.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sequence = Array.from({ length: 30 }, (_, n) => n);
    expect(messagesOf(onOther).map((e) => e.data.n)).toEqual(sequence);
    expect(messagesOf(onOwner).map((e) => e.data.n)).toEqual(sequence);
    expect(messagesOf(onOther).map((e) => e.eventId)).toEqual(messagesOf(onOwner).map((e) => e.eventId));
    expect(onOther.every((e) => e.instanceId === instanceId)).toBe(true);
  } finally {
    for (const socket of sockets) socket.close();
  }
}
