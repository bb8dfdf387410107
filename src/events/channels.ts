/**
 * The event channels beyond webhooks and WebSockets, built from the broker settings
 * (QUEUE_BROKER_URL, KV_STORE_URL + KV_STORE_GLOBAL_EVENTS, LIGHT_BROKER_URL). Each broker is a
 * durable sink on the same outbox road; none is configured by default. Names, routing and message
 * format: docs/channels.md.
 *
 * One of them also carries live events between gateway processes (the relay): Redis when
 * KV_STORE_GLOBAL_EVENTS=true, otherwise the lightweight broker when LIGHT_BROKER_URL is set.
 */
import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { DurableSink, LiveSink, RetryPolicy } from './sink.js';
import type { BrokerSinkOptions } from './sinks/broker.js';
import type { Topic } from '../topic.js';
import { EventRelay, type LocalPush } from './sinks/relay.js';

export interface Channels {
  durable: DurableSink[];
  live: LiveSink[];
  /** The cross-process relay when one is configured (its `origin` tells processes apart). */
  relay: EventRelay | undefined;
  close(): Promise<void>;
}

/**
 * Each broker's client library is loaded only when that broker is configured.
 * @param local where events relayed from other gateway processes are pushed (the WebSocket hub).
 */
export async function createChannels(config: Config, log: FastifyBaseLogger, local: LocalPush): Promise<Channels> {
  const { channels } = config;
  // Brokers never bury an event: it stays in the outbox until the broker confirms it.
  const retry: RetryPolicy = { maxAttempts: null, baseDelayMs: channels.retryBaseMs, maxDelayMs: channels.retryMaxMs };
  const common: BrokerSinkOptions = { retry, publishTimeoutMs: channels.publishTimeoutMs, log };
  const connectionName = (prefix: string) => `waygate ${prefix} ${os.hostname()}:${process.pid}`;

  const durable: DurableSink[] = [];
  let relayTransport: Topic | undefined;

  if (config.queueBrokerUrl) {
    const { AmqpSink } = await import('./sinks/amqp.js');
    durable.push(
      new AmqpSink({
        ...common,
        url: config.queueBrokerUrl,
        prefix: channels.queuePrefix,
        connectionName: connectionName(channels.queuePrefix),
        limits: channels.queueLimits,
      }),
    );
  }
  if (config.kvStoreUrl && config.kvStoreGlobalEvents) {
    const { RedisSink } = await import('./sinks/redis.js');
    const redis = new RedisSink({ ...common, url: config.kvStoreUrl, prefix: config.kvStorePrefix, streamMaxLen: channels.kvStreamMaxLen });
    durable.push(redis);
    relayTransport = redis.relayTransport();
  }
  if (config.lightBrokerUrl) {
    const light = config.lightBrokerUrl.startsWith('nats:')
      ? new (await import('./sinks/nats.js')).NatsSink({
          ...common,
          url: config.lightBrokerUrl,
          prefix: channels.lightPrefix,
          connectionName: connectionName(channels.lightPrefix),
          limits: channels.streamLimits,
        })
      : new (await import('./sinks/mqtt.js')).MqttSink({ ...common, url: config.lightBrokerUrl, prefix: channels.lightPrefix });
    durable.push(light);
    // Redis, when it carries global events, does this job instead.
    relayTransport ??= light.relayTransport();
  }

  const relay = relayTransport ? new EventRelay(relayTransport, local, log) : undefined;
  let closing: Promise<void> | undefined;
  return {
    durable,
    live: relay ? [relay] : [],
    relay,
    close() {
      // The dispatcher closes the durable sinks too; each sink's close is idempotent.
      closing ??= Promise.all(durable.map((sink) => sink.close?.() ?? Promise.resolve())).then(() => undefined);
      return closing;
    },
  };
}
