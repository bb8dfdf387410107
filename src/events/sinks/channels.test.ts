/**
 * Which channels the settings build, and the settings' checks. The brokers here are unreachable
 * ports: building a channel never waits for its broker.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.js';
import { createChannels } from '../channels.js';
import type { OutboxEntry } from '../envelope.js';
import { freePort } from '../../../test/support/brokers.js';
import { amqpQueueArguments } from './amqp.js';
import { natsServerOptions, natsStreamLimits } from './nats.js';

const log = pino({ level: 'silent' });
const nowhere = { push: (_entry: OutboxEntry) => undefined };

describe('channel settings', () => {
  it('builds no channel by default', async () => {
    const channels = await createChannels(loadConfig({}), log, nowhere);
    expect(channels.durable).toEqual([]);
    expect(channels.live).toEqual([]);
    await channels.close();
  });

  it('builds one sink per broker; Redis carries the relay when it carries global events', async () => {
    const port = await freePort();
    const config = loadConfig({
      QUEUE_BROKER_URL: `amqp://127.0.0.1:${port}`,
      KV_STORE_URL: `redis://127.0.0.1:${port}`,
      KV_STORE_GLOBAL_EVENTS: 'true',
      LIGHT_BROKER_URL: `nats://127.0.0.1:${port}`,
    });
    const channels = await createChannels(config, log, nowhere);
    try {
      expect(channels.durable.map((s) => s.name)).toEqual(['amqp', 'redis', 'nats']);
      for (const sink of channels.durable) {
        expect(sink.retry.maxAttempts).toBeNull();
        expect(sink.health?.().up).toBe(false);
      }
      expect(channels.live.map((s) => s.name)).toEqual(['relay']);
    } finally {
      await channels.close();
      await channels.close(); // idempotent
    }
  });

  it('uses the lightweight broker for the relay when Redis does not carry events', async () => {
    const port = await freePort();
    const channels = await createChannels(
      loadConfig({ LIGHT_BROKER_URL: `mqtt://127.0.0.1:${port}`, KV_STORE_URL: `redis://127.0.0.1:${port}` }),
      log,
      nowhere,
    );
    try {
      expect(channels.durable.map((s) => s.name)).toEqual(['mqtt']);
      expect(channels.live.map((s) => s.name)).toEqual(['relay']);
    } finally {
      await channels.close();
    }
  });

  it.each([
    [{ KV_STORE_GLOBAL_EVENTS: 'true' }, 'KV_STORE_GLOBAL_EVENTS'],
    [{ QUEUE_BROKER_PREFIX: 'a b' }, 'QUEUE_BROKER_PREFIX'],
    [{ LIGHT_BROKER_PREFIX: 'a.b' }, 'LIGHT_BROKER_PREFIX'],
    [{ LIGHT_BROKER_PREFIX: 'a/#' }, 'LIGHT_BROKER_PREFIX'],
    [{ LIGHT_BROKER_URL: 'amqp://x' }, 'LIGHT_BROKER_URL'],
    [{ KV_STORE_STREAM_MAXLEN: '-1' }, 'KV_STORE_STREAM_MAXLEN'],
    [{ CHANNEL_PUBLISH_TIMEOUT_MS: '0' }, 'CHANNEL_PUBLISH_TIMEOUT_MS'],
    [{ QUEUE_BROKER_MESSAGE_TTL_SECONDS: '-1' }, 'QUEUE_BROKER_MESSAGE_TTL_SECONDS'],
    [{ QUEUE_BROKER_MESSAGE_TTL_SECONDS: '31536001' }, 'QUEUE_BROKER_MESSAGE_TTL_SECONDS'],
    [{ QUEUE_BROKER_GLOBAL_MAX_LENGTH: '1e6' }, 'QUEUE_BROKER_GLOBAL_MAX_LENGTH'],
    [{ QUEUE_BROKER_GLOBAL_MAX_BYTES: '1GiB' }, 'QUEUE_BROKER_GLOBAL_MAX_BYTES'],
    [{ QUEUE_BROKER_INSTANCE_MAX_LENGTH: '-5' }, 'QUEUE_BROKER_INSTANCE_MAX_LENGTH'],
    [{ QUEUE_BROKER_INSTANCE_MAX_BYTES: '2.5' }, 'QUEUE_BROKER_INSTANCE_MAX_BYTES'],
    [{ LIGHT_BROKER_STREAM_MAX_AGE_SECONDS: '7d' }, 'LIGHT_BROKER_STREAM_MAX_AGE_SECONDS'],
    [{ LIGHT_BROKER_STREAM_MAX_MSGS: '-1' }, 'LIGHT_BROKER_STREAM_MAX_MSGS'],
    [{ LIGHT_BROKER_STREAM_MAX_BYTES: '99999999999999999999' }, 'LIGHT_BROKER_STREAM_MAX_BYTES'],
  ])('stops on %j naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrowError(ConfigError);
    expect(() => loadConfig(env)).toThrowError(new RegExp(`^${variable}:`));
  });

  it('passes NATS credentials from the URL as options', () => {
    expect(natsServerOptions('nats://127.0.0.1:4222')).toEqual({ servers: '127.0.0.1:4222' });
    expect(natsServerOptions('nats://bob:s%40cret@nats.local')).toEqual({ servers: 'nats.local:4222', user: 'bob', pass: 's@cret' });
    expect(natsServerOptions('nats://tok3n@nats.local:4333')).toEqual({ servers: 'nats.local:4333', token: 'tok3n' });
  });

  it('has documented defaults', () => {
    expect(loadConfig({}).channels).toEqual({
      queuePrefix: 'waygate',
      lightPrefix: 'waygate',
      kvStreamMaxLen: 10_000,
      publishTimeoutMs: 10_000,
      retryBaseMs: 500,
      retryMaxMs: 15_000,
      queueLimits: {
        messageTtlSeconds: 604_800,
        global: { maxLength: 1_000_000, maxBytes: 1_073_741_824 },
        instance: { maxLength: 100_000, maxBytes: 104_857_600 },
      },
      streamLimits: { maxAgeSeconds: 604_800, maxMessages: 1_000_000, maxBytes: 1_073_741_824 },
    });
  });

  it('turns a broker limit off with 0', () => {
    const config = loadConfig({
      QUEUE_BROKER_MESSAGE_TTL_SECONDS: '0',
      QUEUE_BROKER_GLOBAL_MAX_LENGTH: '0',
      QUEUE_BROKER_GLOBAL_MAX_BYTES: '0',
      QUEUE_BROKER_INSTANCE_MAX_LENGTH: '0',
      QUEUE_BROKER_INSTANCE_MAX_BYTES: '0',
      LIGHT_BROKER_STREAM_MAX_AGE_SECONDS: '0',
      LIGHT_BROKER_STREAM_MAX_MSGS: '0',
      LIGHT_BROKER_STREAM_MAX_BYTES: '0',
    });
    // RabbitMQ: no arguments at all (the queues of a gateway from before limits existed).
    expect(amqpQueueArguments(config.channels.queueLimits, 'global')).toEqual({});
    expect(amqpQueueArguments(config.channels.queueLimits, 'instance')).toEqual({});
    // JetStream's own "no limit" values.
    expect(natsStreamLimits(config.channels.streamLimits)).toEqual({ max_age: 0, max_msgs: -1, max_bytes: -1, discard: 'old' });
    // A length limit alone still says which end goes.
    const ttlOff = loadConfig({ QUEUE_BROKER_MESSAGE_TTL_SECONDS: '0', QUEUE_BROKER_INSTANCE_MAX_BYTES: '0' }).channels.queueLimits;
    expect(amqpQueueArguments(ttlOff, 'instance')).toEqual({ 'x-max-length': 100_000, 'x-overflow': 'drop-head' });
  });
});
