/**
 * Redis channel against a private redis-server (append-only file, so a restart keeps the stream),
 * stopped and started again mid-burst; plus the relay that carries live events between two gateway
 * processes sharing one PostgreSQL database.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstance, startGateway, waitFor, type TestGateway } from '../../../test/support/gateway.js';
import {
  distinctCount,
  expectRelayAcrossProcesses,
  expectEveryEventInOrder,
  freePort,
  pendingFor,
  privateRedis,
  publishBurst,
  type BrokerProcess,
  FAST_RETRY,
} from '../../../test/support/brokers.js';
import { redisNames } from './redis.js';

function uniquePrefix(): string {
  return `wgt${process.pid}${randomBytes(3).toString('hex')}:`;
}

function redisEnv(redis: BrokerProcess, prefix: string): Record<string, string> {
  return { KV_STORE_URL: `redis://${redis.url}`, KV_STORE_GLOBAL_EVENTS: 'true', KV_STORE_PREFIX: prefix, ...FAST_RETRY };
}

/** Reads the stream from the start and keeps following it, across the server's restarts. */
function followStream(port: number, key: string) {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => undefined);
  const entries: { id: string; fields: Record<string, string>; envelope: any }[] = [];
  let stopped = false;
  let lastId = '0';
  const loop = (async () => {
    while (!stopped) {
      try {
        const reply = await client.xread('COUNT', 500, 'BLOCK', 500, 'STREAMS', key, lastId);
        for (const [, items] of reply ?? []) {
          for (const [id, flat] of items) {
            const fields: Record<string, string> = {};
            for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
            entries.push({ id, fields, envelope: JSON.parse(fields.body!) });
            lastId = id;
          }
        }
      } catch {
        // The server is away: try again shortly from the last id seen.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  })();
  return {
    entries,
    async stop() {
      stopped = true;
      await loop;
      client.disconnect();
    },
  };
}

async function healthOf(gw: TestGateway): Promise<{ up: boolean; detail?: string } | undefined> {
  const res = await gw.api('GET', '/api/v1/server/ok');
  return res.status === 200 ? res.body.channels.redis : undefined;
}

describe('Redis channel', () => {
  let redis: BrokerProcess;

  beforeAll(async () => {
    redis = await privateRedis();
    await redis.start();
  });
  afterAll(async () => redis.dispose());

  it('publishes each event on its instance channel, the global channel and the stream', async () => {
    const prefix = uniquePrefix();
    const names = redisNames(prefix);
    const gw = await startGateway({ env: redisEnv(redis, prefix) });
    const subscriber = new Redis({ port: redis.port, host: '127.0.0.1' });
    try {
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      const onChannel = new Map<string, any[]>();
      subscriber.on('message', (channel: string, message: string) => {
        const list = onChannel.get(channel) ?? [];
        list.push(JSON.parse(message));
        onChannel.set(channel, list);
      });
      await subscriber.subscribe(names.globalChannel, names.instanceChannel(a.id));
      await waitFor(async () => ((await healthOf(gw))?.up ? true : undefined), 10_000, 'redis channel up');

      await publishBurst(gw, [a.id, b.id], 100);
      await waitFor(() => (onChannel.get(names.globalChannel)?.length === 100 ? true : undefined), 20_000, 'global channel');
      await waitFor(() => (onChannel.get(names.instanceChannel(a.id))?.length === 50 ? true : undefined), 20_000, 'instance channel');
      expectEveryEventInOrder(
        onChannel.get(names.globalChannel)!,
        new Map([
          [a.id, 50],
          [b.id, 50],
        ]),
      );
      expectEveryEventInOrder(onChannel.get(names.instanceChannel(a.id))!, new Map([[a.id, 50]]));

      const stream = followStream(redis.port, names.stream);
      await waitFor(() => (stream.entries.length === 100 ? true : undefined), 10_000, 'stream entries');
      await stream.stop();
      const entry = stream.entries[0]!;
      const stored = await gw.storage.db
        .selectFrom('outbox')
        .select('body')
        .where('event_id', '=', entry.fields.eventId!)
        .executeTakeFirstOrThrow();
      expect(entry.fields).toEqual({
        eventId: entry.envelope.eventId,
        event: 'MESSAGE',
        instanceId: entry.envelope.instanceId,
        body: stored.body,
      });
    } finally {
      subscriber.disconnect();
      await gw.stop();
    }
  });

  it('delivers a burst of 1,000 in per-instance order across a Redis restart', { timeout: 60_000 }, async () => {
    const prefix = uniquePrefix();
    const gw = await startGateway({ env: redisEnv(redis, prefix) });
    const stream = followStream(redis.port, redisNames(prefix).stream);
    try {
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      await waitFor(async () => ((await healthOf(gw))?.up ? true : undefined), 10_000, 'redis channel up');

      const burst = publishBurst(gw, [a.id, b.id], 1000, { chunk: 25, gapMs: 40 });
      await waitFor(() => (distinctCount(stream.entries.map((e) => e.envelope)) >= 250 ? true : undefined), 30_000, '250 events');
      await redis.stop();
      expect(distinctCount(stream.entries.map((e) => e.envelope))).toBeLessThan(1000);
      // Events keep being stored while Redis is away; none is acknowledged.
      await waitFor(async () => ((await pendingFor(gw, 'redis')).maxAttempts >= 1 ? true : undefined), 20_000, 'failed attempts');
      await redis.start();
      await burst;

      await waitFor(() => (distinctCount(stream.entries.map((e) => e.envelope)) === 1000 ? true : undefined), 40_000, 'all 1,000 events');
      expectEveryEventInOrder(
        stream.entries.map((e) => e.envelope),
        new Map([
          [a.id, 500],
          [b.id, 500],
        ]),
      );
      await waitFor(async () => ((await pendingFor(gw, 'redis')).rows === 0 ? true : undefined), 10_000, 'outbox drained');
      await waitFor(async () => ((await healthOf(gw))?.up ? true : undefined), 10_000, 'redis channel up again');
    } finally {
      await stream.stop();
      await gw.stop();
    }
  });

  it('starts while Redis is unreachable, reports the channel down, keeps retrying and loses nothing', { timeout: 60_000 }, async () => {
    const late = await privateRedis(await freePort());
    const prefix = uniquePrefix();
    const gw = await startGateway({ env: { ...redisEnv(late, prefix), RATE_LIMIT_PER_IP: '1000000' } });
    try {
      // Rate limits share this Redis, so HTTP requests fail while it is away (the gateway's rate
      // limiter does not fail open): the instance is made and the health read without HTTP.
      const { instance } = await gw.instances.create({ instanceName: `late-${prefix.slice(0, -1)}`, network: 'sandbox' });
      const sink = gw.channels.durable.find((s) => s.name === 'redis')!;
      const health = await waitFor(
        () => {
          const h = sink.health!();
          return !h.up && h.detail !== 'connecting' ? h : undefined;
        },
        10_000,
        'redis reported down with a reason',
      );
      expect(health.detail).toMatch(/ECONNREFUSED|closed/);
      await publishBurst(gw, [instance.id], 20);
      await waitFor(async () => ((await pendingFor(gw, 'redis')).maxAttempts >= 2 ? true : undefined), 20_000, 'repeated attempts');
      expect((await pendingFor(gw, 'redis')).rows).toBe(20);

      await late.start();
      const stream = followStream(late.port, redisNames(prefix).stream);
      await waitFor(() => (distinctCount(stream.entries.map((e) => e.envelope)) === 20 ? true : undefined), 30_000, 'the 20 stored events');
      await stream.stop();
      expectEveryEventInOrder(
        stream.entries.map((e) => e.envelope),
        new Map([[instance.id, 20]]),
      );
      await waitFor(async () => ((await pendingFor(gw, 'redis')).rows === 0 ? true : undefined), 10_000, 'outbox drained');
      expect(await healthOf(gw)).toMatchObject({ up: true });
    } finally {
      await gw.stop();
      await late.dispose();
    }
  });

  it('shows a WebSocket client on process B the events of an instance owned by process A', async () => {
    await expectRelayAcrossProcesses(redisEnv(redis, uniquePrefix()));
  });
});
