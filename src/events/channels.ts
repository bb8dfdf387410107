/**
 * The event channels beyond webhooks and WebSockets, built from the broker settings
 * (QUEUE_BROKER_URL, KV_STORE_URL + KV_STORE_GLOBAL_EVENTS, LIGHT_BROKER_URL). Each is a sink on the
 * same outbox road; none is configured by default.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { DurableSink, LiveSink } from './sink.js';

export interface Channels {
  durable: DurableSink[];
  live: LiveSink[];
  close(): Promise<void>;
}

export function createChannels(_config: Config, _log: FastifyBaseLogger): Channels {
  return { durable: [], live: [], close: () => Promise.resolve() };
}
