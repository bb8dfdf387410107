/**
 * Cluster mode (docs/deployment.md): every process on one PostgreSQL database is active. Each holds
 * the sessions of the instances it leases (node.ts), stores and delivers their events under a
 * write fence, forwards requests for other instances to their owners (routing.ts), and hears the
 * other processes over Redis (channel.ts): live events for WebSocket clients, instance changes,
 * sandbox deliveries.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ClusterConfig } from '../config.js';
import type { EventBus } from '../events/bus.js';
import type { OutboxDispatcher } from '../events/dispatcher.js';
import type { OutboxStore } from '../events/outbox.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { SessionRegistry } from '../sessions/registry.js';
import type { Storage } from '../storage/db.js';
import type { Topic } from '../topic.js';
import { ClusterChannel } from './channel.js';
import { ClusterNode } from './node.js';
import { ClusterRepo } from './repo.js';
import { ClusterRouting } from './routing.js';

export interface ClusterDeps {
  storage: Storage;
  instances: InstanceService;
  sessions: SessionRegistry;
  bus: EventBus;
  dispatcher: OutboxDispatcher;
  outbox: OutboxStore;
  log: FastifyBaseLogger;
  /** For admin operations over many instances that act on instances other processes hold. */
  adminKey: string;
}

export class Cluster {
  readonly node: ClusterNode;
  readonly routing: ClusterRouting;

  private constructor(
    private readonly config: ClusterConfig,
    private readonly channel: ClusterChannel,
    deps: ClusterDeps,
  ) {
    const { sessions, bus, dispatcher, instances, log } = deps;
    this.node = new ClusterNode(
      new ClusterRepo(deps.storage.db),
      config,
      {
        adopt: async (instanceId) => {
          await sessions.adopt(instanceId);
          await dispatcher.resumeInstance(instanceId);
        },
        drop: async (instanceId) => {
          // The session's last events are stored under our fence, then its lanes stop.
          await sessions.release(instanceId);
          await bus.settled();
          await dispatcher.releaseInstance(instanceId);
        },
        pairing: (instanceId) => sessions.pairing(instanceId),
      },
      log,
    );
    this.routing = new ClusterRouting(config.secret, this.node, config.forwardTimeoutMs);
    const owns = (instanceId: string) => this.node.owns(instanceId);
    sessions.activeWhen(owns, (instanceId) => this.routing.refusal(instanceId));
    dispatcher.runOnlyFor(owns);
    sessions.reconnectElsewhereWith(async (instanceId) => {
      // Hops 1: a free instance is taken here rather than sent on.
      const where = await this.node.place(instanceId, 1);
      if (where.here) return sessions.reconnect(await instances.get(instanceId));
      await this.routing.callAsAdmin(where.address, 'POST', `/api/v1/instance/reconnect/${encodeURIComponent(instanceId)}`, deps.adminKey);
    });
    deps.outbox.fenceWith(this.node.fence);
    instances.fenceConnectionState(this.node.fence);
    // What one process changes in an instance, the others read again.
    const changes = channel.topic('instances');
    const origin = this.node.nodeId;
    instances.onChange((id) => changes.publish(`${origin} ${id}`));
    changes.subscribe((payload) => {
      const [from, id] = payload.split(' ');
      if (from !== origin && id) instances.forget(id);
    });
  }

  static async create(config: ClusterConfig, redisUrl: string, prefix: string, deps: ClusterDeps): Promise<Cluster> {
    const channel = new ClusterChannel(redisUrl, `${prefix}cluster`, deps.log);
    await channel.start();
    return new Cluster(config, channel, deps);
  }

  /** A topic between the processes (live events, sandbox deliveries). */
  topic(name: string): Topic {
    return this.channel.topic(name);
  }

  /** Joins once the HTTP server listens (`port` is where it listens). */
  async start(host: string, port: number): Promise<void> {
    const address = this.config.advertiseUrl ?? `http://${host}:${port}`;
    await this.node.start(address);
  }

  /**
   * Hands every instance over and leaves the cluster, while the HTTP server still serves: requests
   * for an instance being handed over wait for it and go to its next owner.
   */
  leave(): Promise<void> {
    return this.node.stop();
  }

  /** Closes the connections to the other processes (after the HTTP server closed). */
  async close(): Promise<void> {
    await this.node.stop();
    await this.routing.close();
    await this.channel.close();
  }
}
