/**
 * Wires the gateway together: config -> storage -> network drivers -> services -> HTTP. main.ts runs
 * it as a process; tests build it in-process with their own clock and settings.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { resolveAdminKey } from './admin-key.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { EventBus } from './events/bus.js';
import { createChannels } from './events/channels.js';
import { DeadLetterStore } from './events/dead-letters.js';
import { OutboxDispatcher } from './events/dispatcher.js';
import { OutboxStore } from './events/outbox.js';
import { eventRoutes } from './events/routes.js';
import { DeadLetterService } from './events/service.js';
import type { DurableSink } from './events/sink.js';
import { WebhookSink } from './events/sinks/webhook.js';
import { WebSocketHub } from './events/sinks/websocket.js';
import { buildApp } from './http/app.js';
import { MemoryWindowStore, RedisWindowStore, type SlidingWindowStore } from './http/rate-limit.js';
import { InstanceRepo } from './instances/repo.js';
import { instanceRoutes } from './instances/routes.js';
import { InstanceService } from './instances/service.js';
import { sendRoutes } from './messaging/routes.js';
import { MessagingService } from './messaging/service.js';
import { SandboxDriver } from './network/sandbox/driver.js';
import { SandboxNetwork } from './network/sandbox/network.js';
import { sandboxRoutes } from './network/sandbox/routes.js';
import { SandboxService } from './network/sandbox/service.js';
import { SessionRegistry } from './network/sessions.js';
import { createMetricsRegistry, metricsRoutes } from './server/metrics.js';
import { serverRoutes } from './server/routes.js';
import { openStorage, type OpenOptions, type Storage } from './storage/db.js';
import { VERSION } from './version.js';
import { createLogger } from './logger.js';

export interface GatewayOptions {
  clock?: Clock;
  /** Defaults to a pino logger at the configured level. */
  logger?: FastifyBaseLogger;
  storage?: OpenOptions;
  /** Retry waits of the outbox lanes (tests shorten them). */
  sleep?: (ms: number) => Promise<void>;
}

export interface Gateway {
  app: FastifyInstance;
  adminKey: string;
  adminKeyGenerated: boolean;
  storage: Storage;
  instances: InstanceService;
  sessions: SessionRegistry;
  bus: EventBus;
  dispatcher: OutboxDispatcher;
  outbox: OutboxStore;
  hub: WebSocketHub;
  sandbox: SandboxNetwork;
  /** Starts listening; resolves with the base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const clock = options.clock ?? systemClock;
  const admin = resolveAdminKey(config.globalApiKey, config.dataDir);
  const storage = await openStorage(config.databaseUrl, options.storage ?? (config.databaseSchema ? { schema: config.databaseSchema } : {}));

  const redis = config.kvStoreUrl ? new Redis(config.kvStoreUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }) : undefined;
  const rateLimitStore: SlidingWindowStore = redis ? new RedisWindowStore(redis, `${config.kvStorePrefix}ratelimit:`) : new MemoryWindowStore();

  const instances = new InstanceService(new InstanceRepo(storage.db), clock, config.tokenGraceSeconds, config.tokenCache);
  const outbox = new OutboxStore(storage.db);
  const deadLetterStore = new DeadLetterStore(storage.db);
  const webhook = new WebhookSink({
    timeoutMs: config.webhook.timeoutMs,
    retry: { maxAttempts: config.webhook.maxAttempts, baseDelayMs: config.webhook.retryBaseMs, maxDelayMs: config.webhook.retryMaxMs },
    userAgent: `Waygate/${VERSION}`,
  });
  const log = options.logger ?? createLogger(config.logLevel);
  const channels = createChannels(config, log);
  const durableSinks: DurableSink[] = [webhook, ...channels.durable];
  const hub = new WebSocketHub(config.websocket.maxBufferedBytes, config.websocket.pingIntervalMs);

  const dispatcher = new OutboxDispatcher({
    outbox,
    deadLetters: deadLetterStore,
    instances,
    sinks: durableSinks,
    clock,
    log: log,
    ...(options.sleep ? { sleep: options.sleep } : {}),
  });
  const bus = new EventBus(outbox, dispatcher, durableSinks, instances, clock, log);
  bus.addLiveSink(hub);
  for (const sink of channels.live) bus.addLiveSink(sink);

  const world = new SandboxNetwork(clock);
  const sandboxDriver = new SandboxDriver(world, config.sandbox);
  const sessions = new SessionRegistry([sandboxDriver], instances, bus, log);
  instances.onDeletion(sessions);
  instances.onDeletion({ instanceDeleted: (id) => hub.disconnect(id, 4404, 'instance deleted') });

  const messaging = new MessagingService(sessions);
  const deadLetters = new DeadLetterService(deadLetterStore, instances, webhook, clock);
  const sandbox = new SandboxService(world, sessions, instances);
  const startedAt = Date.now();
  const channelHealth = () => Object.fromEntries(durableSinks.flatMap((s) => (s.health ? [[s.name, s.health()]] : [])));
  const metrics = createMetricsRegistry({
    instancesByStatus: () => instances.countByStatus(),
    pendingDeliveries: () => outbox.pendingBySink(),
    websocketClients: () => hub.count(),
    channels: channelHealth,
  });

  const app = await buildApp({
    config,
    clock,
    adminKey: admin.key,
    instances,
    rateLimitStore,
    logger: log,
    rootRoutes: [metricsRoutes(metrics)],
    routes: [
      serverRoutes({
        version: VERSION,
        startedAt,
        channels: channelHealth,
      }),
      instanceRoutes(instances, sessions),
      sendRoutes(messaging),
      eventRoutes(deadLetters, instances, hub),
      sandboxRoutes(sandbox),
    ],
  });

  // Delivered events leave the outbox after OUTBOX_RETENTION_SECONDS.
  const pruner = setInterval(() => {
    outbox.prune(clock.now() - config.outboxRetentionSeconds * 1000).catch((error: unknown) => log.warn({ err: error }, 'outbox prune failed'));
  }, 60_000);
  pruner.unref();

  let closed = false;
  return {
    app,
    adminKey: admin.key,
    adminKeyGenerated: admin.generated,
    storage,
    instances,
    sessions,
    bus,
    dispatcher,
    outbox,
    hub,
    sandbox: world,
    async listen() {
      await app.listen({ port: config.port, host: config.host });
      await sessions.resumeAll();
      await dispatcher.resume();
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
      return `http://${host}:${port}`;
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(pruner);
      await app.close();
      await sessions.stop();
      await bus.settled();
      await dispatcher.stop();
      await hub.close();
      await channels.close();
      redis?.disconnect();
      await storage.close();
    },
  };
}
