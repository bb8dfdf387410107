/**
 * Messages between the processes of a cluster over Redis pub/sub, on one channel
 * (`<KV_STORE_PREFIX>cluster`) split into topics: live events for WebSocket clients, instance
 * changes (caches), sandbox deliveries. Best-effort like any pub/sub: what must not be lost travels
 * through PostgreSQL (the outbox, the leases).
 */
import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import type { Topic } from '../topic.js';

export class ClusterChannel {
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly listeners = new Map<string, ((payload: string) => void)[]>();

  constructor(
    url: string,
    private readonly channel: string,
    private readonly log: FastifyBaseLogger,
  ) {
    this.publisher = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectionName: 'waygate-cluster' });
    this.subscriber = new Redis(url, { maxRetriesPerRequest: null, enableOfflineQueue: true, connectionName: 'waygate-cluster-sub' });
    this.publisher.on('error', (error: unknown) => this.log.debug({ err: error }, 'cluster channel publisher error'));
    this.subscriber.on('error', (error: unknown) => this.log.debug({ err: error }, 'cluster channel subscriber error'));
    this.subscriber.on('message', (from: string, message: string) => {
      if (from !== this.channel) return;
      const split = message.indexOf('\n');
      if (split <= 0) return;
      for (const listener of this.listeners.get(message.slice(0, split)) ?? []) {
        try {
          listener(message.slice(split + 1));
        } catch (error) {
          this.log.warn({ err: error }, 'a cluster message could not be handled');
        }
      }
    });
  }

  /** Subscribes (resolves once Redis confirmed, so nothing published after it is missed). */
  async start(): Promise<void> {
    await this.subscriber.subscribe(this.channel);
    if (this.publisher.status !== 'ready') await new Promise((resolve) => this.publisher.once('ready', resolve));
  }

  topic(name: string): Topic {
    return {
      description: `redis channel ${this.channel} (${name})`,
      publish: (payload) => {
        if (this.publisher.status !== 'ready') return;
        this.publisher.publish(this.channel, `${name}\n${payload}`).catch((error: unknown) => {
          this.log.debug({ err: error }, 'cluster publish failed');
        });
      },
      subscribe: (onMessage) => {
        const list = this.listeners.get(name) ?? [];
        list.push(onMessage);
        this.listeners.set(name, list);
      },
    };
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
    this.publisher.disconnect();
  }
}
