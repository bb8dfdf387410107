/**
 * NATS channel against private nats-server processes: with JetStream (its own store folder, so a
 * restart keeps the stream) stopped and started again mid-burst; without JetStream (core publish);
 * unreachable at start; and as the relay of live events between two gateway processes.
 */
import { DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstance, startGateway, waitFor } from '../../../test/support/gateway.js';
import {
  channelHealth,
  distinctCount,
  expectRelayAcrossProcesses,
  expectEveryEventInOrder,
  freePort,
  pendingFor,
  privateNats,
  publishBurst,
  type BrokerProcess,
  FAST_RETRY,
  uniquePrefix,
} from '../../../test/support/brokers.js';
import { natsNames } from './nats.js';

function natsEnv(server: BrokerProcess, prefix: string): Record<string, string> {
  return { LIGHT_BROKER_URL: `nats://${server.url}`, LIGHT_BROKER_PREFIX: prefix, ...FAST_RETRY };
}

interface Received {
  subject: string;
  headers: MsgHdrs | undefined;
  envelope: any;
}

async function client(server: BrokerProcess): Promise<NatsConnection> {
  return connect({ servers: server.url, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
}

/** Reads the gateway's stream from its first message with an ordered consumer (it recovers after restarts). */
async function followStream(nc: NatsConnection, stream: string): Promise<{ received: Received[]; stop(): Promise<void> }> {
  const received: Received[] = [];
  const consumer = await jetstream(nc).consumers.get(stream);
  // Short pull expiry: after the server's restart the consumer notices and recreates itself within seconds.
  const messages = await consumer.consume({ expires: 2000 });
  const loop = (async () => {
    for await (const message of messages) received.push({ subject: message.subject, headers: message.headers, envelope: message.json() });
  })();
  return {
    received,
    async stop() {
      await messages.close();
      await loop;
    },
  };
}

describe('NATS channel', () => {
  let server: BrokerProcess;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    server = await privateNats();
    await server.start();
  });
  afterAll(async () => {
    for (const nc of connections) await nc.close().catch(() => undefined);
    await server.dispose();
  });

  it('delivers a burst of 1,000 to the JetStream stream in per-instance order across a server restart', { timeout: 60_000 }, async () => {
    const prefix = uniquePrefix();
    const names = natsNames(prefix);
    const gw = await startGateway({ env: natsEnv(server, prefix) });
    try {
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      const health = await waitFor(
        async () => {
          const h = await channelHealth(gw, 'nats');
          return h?.up ? h : undefined;
        },
        30_000,
        'nats channel up',
      );
      expect(health.detail).toBe(`jetstream stream ${names.stream}`);

      const nc = await client(server);
      connections.push(nc);
      const stream = await followStream(nc, names.stream);
      const envelopes = () => stream.received.map((r) => r.envelope);

      const burst = publishBurst(gw, [a.id, b.id], 1000, { chunk: 25, gapMs: 40 });
      await waitFor(() => (distinctCount(envelopes()) >= 250 ? true : undefined), 30_000, '250 events');
      await server.stop();
      expect(distinctCount(envelopes())).toBeLessThan(1000);
      await waitFor(async () => ((await channelHealth(gw, 'nats'))?.up === false ? true : undefined), 10_000, 'nats reported down');
      await waitFor(async () => ((await pendingFor(gw, 'nats')).maxAttempts >= 1 ? true : undefined), 20_000, 'failed attempts');
      await server.start();
      await burst;

      await waitFor(() => (distinctCount(envelopes()) === 1000 ? true : undefined), 40_000, 'all 1,000 events');
      expectEveryEventInOrder(
        envelopes(),
        new Map([
          [a.id, 500],
          [b.id, 500],
        ]),
      );
      await waitFor(async () => ((await pendingFor(gw, 'nats')).rows === 0 ? true : undefined), 10_000, 'outbox drained');
      await stream.stop();

      const first = stream.received.find((r) => r.envelope.instanceId === b.id)!;
      expect(first.subject).toBe(names.subject(b.id, 'MESSAGE'));
      expect(first.headers?.get('Waygate-Event-Id')).toBe(first.envelope.eventId);
      expect(first.headers?.get('Nats-Msg-Id')).toBe(first.envelope.eventId);
      expect(first.headers?.get('Waygate-Event')).toBe('MESSAGE');
      expect(first.headers?.get('Waygate-Instance-Id')).toBe(b.id);
      const stored = await gw.storage.db
        .selectFrom('outbox')
        .select('body')
        .where('event_id', '=', first.envelope.eventId)
        .executeTakeFirstOrThrow();
      expect(JSON.stringify(first.envelope)).toBe(stored.body);
    } finally {
      await gw.stop();
    }
  });

  it('publishes on core NATS subjects when the server has no JetStream', async () => {
    const core = await privateNats({ jetstream: false });
    await core.start();
    const prefix = uniquePrefix();
    const names = natsNames(prefix);
    const gw = await startGateway({ env: natsEnv(core, prefix) });
    const nc = await client(core);
    try {
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      const health = await waitFor(
        async () => {
          const h = await channelHealth(gw, 'nats');
          return h?.up ? h : undefined;
        },
        30_000,
        'nats channel up',
      );
      expect(health.detail).toMatch(/core nats/);
      const all: any[] = [];
      const ofA: any[] = [];
      nc.subscribe(names.globalWildcard, { callback: (_e, m) => void all.push(m.json()) });
      nc.subscribe(names.instanceWildcard(a.id), { callback: (_e, m) => void ofA.push(m.json()) });
      await nc.flush();

      await publishBurst(gw, [a.id, b.id], 200);
      await waitFor(() => (all.length === 200 && ofA.length === 100 ? true : undefined), 20_000, 'core subjects');
      expectEveryEventInOrder(
        all,
        new Map([
          [a.id, 100],
          [b.id, 100],
        ]),
      );
      expectEveryEventInOrder(ofA, new Map([[a.id, 100]]));
    } finally {
      await nc.close();
      await gw.stop();
      await core.dispose();
    }
  });

  it('authenticates with the user and password of the URL', async () => {
    const guarded = await privateNats({ jetstream: false, args: ['--user', 'waygate', '--pass', 's3cret'] });
    await guarded.start();
    const prefix = uniquePrefix();
    const gw = await startGateway({ env: { ...natsEnv(guarded, prefix), LIGHT_BROKER_URL: `nats://waygate:s3cret@${guarded.url}` } });
    try {
      await waitFor(async () => ((await channelHealth(gw, 'nats'))?.up ? true : undefined), 30_000, 'nats channel up');
    } finally {
      await gw.stop();
      await guarded.dispose();
    }
  });

  it('starts with the server unreachable, reports the channel down, keeps retrying and loses nothing', { timeout: 60_000 }, async () => {
    const late = await privateNats({ port: await freePort() });
    const prefix = uniquePrefix();
    const gw = await startGateway({ env: natsEnv(late, prefix) });
    try {
      const a = await createInstance(gw);
      const health = await waitFor(
        async () => {
          const h = await channelHealth(gw, 'nats');
          return h && !h.up && h.detail !== 'connecting' ? h : undefined;
        },
        15_000,
        'nats reported down with a reason',
      );
      expect(health.detail).toMatch(/ECONNREFUSED|CONNECTION_REFUSED|refused/i);

      await publishBurst(gw, [a.id], 20);
      await waitFor(async () => ((await pendingFor(gw, 'nats')).maxAttempts >= 2 ? true : undefined), 20_000, 'repeated attempts');
      expect((await pendingFor(gw, 'nats')).rows).toBe(20);

      await late.start();
      await waitFor(async () => ((await channelHealth(gw, 'nats'))?.up ? true : undefined), 20_000, 'nats reported up');
      await waitFor(async () => ((await pendingFor(gw, 'nats')).rows === 0 ? true : undefined), 20_000, 'outbox drained');
      const nc = await client(late);
      try {
        const stream = await followStream(nc, natsNames(prefix).stream);
        await waitFor(() => (stream.received.length >= 20 ? true : undefined), 10_000, 'the 20 stored events');
        await stream.stop();
        expectEveryEventInOrder(
          stream.received.map((r) => r.envelope),
          new Map([[a.id, 20]]),
        );
      } finally {
        await nc.close();
      }
    } finally {
      await gw.stop();
      await late.dispose();
    }
  });

  it('comes up by itself when its first JetStream setup failed, with no event waiting to retry it', { timeout: 60_000 }, async () => {
    const prefix = uniquePrefix();
    const names = natsNames(prefix);
    const nc = await client(server);
    connections.push(nc);
    const manager = await jetstreamManager(nc);
    // Another stream already captures the subjects: the gateway's stream cannot be created yet.
    const blocker = `${names.stream}_BLOCKER`;
    await manager.streams.add({ name: blocker, subjects: [names.globalWildcard] });
    const gw = await startGateway({ env: natsEnv(server, prefix) });
    try {
      await waitFor(
        async () => {
          const h = await channelHealth(gw, 'nats');
          return h && !h.up && /jetstream setup failed/.test(h.detail ?? '') ? true : undefined;
        },
        30_000,
        'nats setup failure reported',
      );
      await manager.streams.delete(blocker);
      const health = await waitFor(
        async () => {
          const h = await channelHealth(gw, 'nats');
          return h?.up ? h : undefined;
        },
        30_000,
        'nats channel up',
      );
      expect(health.detail).toBe(`jetstream stream ${names.stream}`);
    } finally {
      await gw.stop();
      await manager.streams.delete(names.stream).catch(() => undefined);
    }
  });

  it('creates the stream with the configured limits; beyond max_msgs the oldest events go', { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix();
    const names = natsNames(prefix);
    const env = {
      ...natsEnv(server, prefix),
      LIGHT_BROKER_STREAM_MAX_AGE_SECONDS: '3600',
      LIGHT_BROKER_STREAM_MAX_MSGS: '3',
      LIGHT_BROKER_STREAM_MAX_BYTES: '1048576',
    };
    const gw = await startGateway({ env });
    const nc = await client(server);
    connections.push(nc);
    const manager = await jetstreamManager(nc);
    try {
      const a = await createInstance(gw);
      await waitFor(async () => ((await channelHealth(gw, 'nats'))?.up ? true : undefined), 30_000, 'nats channel up');
      const { config } = await manager.streams.info(names.stream);
      expect(config).toMatchObject({ max_age: nanos(3_600_000), max_msgs: 3, max_bytes: 1_048_576, discard: DiscardPolicy.Old });
      expect(config.duplicate_window).toBe(nanos(120_000));

      await publishBurst(gw, [a.id], 5, { chunk: 1 });
      await waitFor(async () => ((await pendingFor(gw, 'nats')).rows === 0 ? true : undefined), 15_000, 'outbox drained');
      const { state } = await manager.streams.info(names.stream);
      expect(state).toMatchObject({ messages: 3, first_seq: 3, last_seq: 5 });
      const kept = await Promise.all([3, 4, 5].map(async (seq) => (await manager.streams.getMessage(names.stream, { seq }))!.json<any>()));
      expect(kept.map((envelope) => envelope.data.n)).toEqual([2, 3, 4]);
    } finally {
      await gw.stop();
      await manager.streams.delete(names.stream).catch(() => undefined);
    }
  });

  it(
    'brings an existing stream to the configured limits at start, and a changed setting at the next start',
    { timeout: 45_000 },
    async () => {
      const prefix = uniquePrefix();
      const names = natsNames(prefix);
      const nc = await client(server);
      connections.push(nc);
      const manager = await jetstreamManager(nc);
      // Made by an operator (or an older gateway): other limits, discard new, a description of its own.
      await manager.streams.add({
        name: names.stream,
        subjects: [names.globalWildcard],
        description: 'made by hand',
        max_msgs: 10,
        max_age: nanos(60_000),
        duplicate_window: nanos(30_000),
        discard: DiscardPolicy.New,
      });
      const withLimits = async (env: Record<string, string>) => {
        const logs = { level: 'info' as const, lines: [] as string[] };
        const gw = await startGateway({ env: { ...natsEnv(server, prefix), ...env }, logs });
        try {
          await waitFor(async () => ((await channelHealth(gw, 'nats'))?.up ? true : undefined), 30_000, 'nats channel up');
          return { config: (await manager.streams.info(names.stream)).config, lines: logs.lines };
        } finally {
          await gw.stop();
        }
      };
      try {
        const defaults = await withLimits({});
        expect(defaults.config).toMatchObject({
          max_age: nanos(7 * 86_400_000),
          max_msgs: 1_000_000,
          max_bytes: 1_073_741_824,
          discard: DiscardPolicy.Old,
          // What the gateway does not own stays as it was.
          description: 'made by hand',
          duplicate_window: nanos(30_000),
        });
        const updated = defaults.lines.map((line) => JSON.parse(line)).find((line) => /updated the limits/.test(line.msg));
        expect(updated).toMatchObject({
          stream: names.stream,
          from: { max_msgs: 10, discard: 'new' },
          to: { max_msgs: 1_000_000, discard: 'old' },
        });

        // The next start with other settings: a 0 turns the limit off.
        const changed = await withLimits({ LIGHT_BROKER_STREAM_MAX_MSGS: '0', LIGHT_BROKER_STREAM_MAX_AGE_SECONDS: '10' });
        expect(changed.config).toMatchObject({
          max_msgs: -1,
          max_age: nanos(10_000),
          max_bytes: 1_073_741_824,
          duplicate_window: nanos(10_000),
        });

        // Unchanged settings: no update, no log line.
        const same = await withLimits({ LIGHT_BROKER_STREAM_MAX_MSGS: '0', LIGHT_BROKER_STREAM_MAX_AGE_SECONDS: '10' });
        expect(same.lines.some((line) => /updated the limits/.test(line))).toBe(false);
      } finally {
        await manager.streams.delete(names.stream).catch(() => undefined);
      }
    },
  );

  it('relays live events between gateway processes when Redis does not (WebSocket on B, instance on A)', async () => {
    await expectRelayAcrossProcesses(natsEnv(server, uniquePrefix()));
  });
});
