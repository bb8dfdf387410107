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
import { natsServerOptions } from './nats.js';

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
    });
  });
});
