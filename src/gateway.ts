/**
 * Wires the gateway together: the shared services (config, storage, the event road, network drivers,
 * sessions, media, the message store) and then the FEATURES modules, which add the routes and the
 * background work. main.ts runs it as a process; tests build it in-process with their own clock and settings.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { resolveAdminKey } from './admin-key.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { EventBus } from './events/bus.js';
import { createChannels, type Channels } from './events/channels.js';
import { DeadLetterStore } from './events/dead-letters.js';
import { DeadLetterService } from './events/dead-letter-service.js';
import { OutboxDispatcher } from './events/dispatcher.js';
import { OutboxStore } from './events/outbox.js';
import type { DurableSink } from './events/sink.js';
import { WebhookSink } from './events/sinks/webhook.js';
import { WebSocketHub } from './events/sinks/websocket.js';
import { buildApp } from './http/app.js';
import { emptyResolvers } from './http/auth.js';
import { MemoryWindowStore, RedisWindowStore, type SlidingWindowStore } from './http/rate-limit.js';
import { InstanceRepo } from './instance-registry/repo.js';
import { InstanceService } from './instance-registry/service.js';
import { createLogger } from './logger.js';
import { createMediaStore } from './media/index.js';
import { nonPublicTarget } from './media/address.js';
import { MediaAdmission } from './media/admission.js';
import { sweepOrphanMedia } from './media/orphans.js';
import { MediaFetcher } from './media/fetch.js';
import { MediaResolver } from './media/resolver.js';
import type { MediaStore } from './media/store.js';
import type { GatewayModule, ModuleDeps, ModuleFactory } from './modules.js';
import { messageTypeOf, type NetworkDriver } from './network/port.js';
import { SandboxDriver } from './network/sandbox/driver.js';
import { SandboxNetwork } from './network/sandbox/network.js';
import { SandboxWorld } from './network/sandbox/world.js';
import { SqlWorldStore } from './network/sandbox/world-store.js';
import { WhatsAppDriver, whatsappSettings } from './network/whatsapp/driver.js';
import { MessageRecorder } from './message-store/recorder.js';
import { MessagingService } from './outgoing/service.js';
import { MessageStore } from './message-store/store.js';
import { createMetricsRegistry, TrafficMetrics } from './server/metrics.js';
import { SessionRegistry } from './sessions/registry.js';
import { acquireActiveLease } from './storage/active-lease.js';
import { Cluster } from './cluster/index.js';
import type { WriteFence } from './storage/fence.js';
import { EventRelay } from './events/sinks/relay.js';
import { openStorage, type OpenOptions, type Storage } from './storage/db.js';
import { VERSION } from './version.js';
import { callsModule } from './calls/module.js';
import { chatsModule } from './chats/module.js';
import { communitiesModule } from './communities/module.js';
import { deliveryModule } from './delivery/module.js';
import { groupsModule } from './groups/module.js';
import { instancesModule } from './instances/module.js';
import { labelsModule } from './labels/module.js';
import { messagesModule } from './messages/module.js';
import { newslettersModule } from './newsletters/module.js';
import { sandboxModule } from './sandbox/module.js';
import { sendingModule } from './sending/module.js';
import { serverModule } from './server/module.js';
import { usersModule } from './users/module.js';
import { backlogCounts } from './health/repo.js';
import { healthRoutes, registerHealthMetric } from './health/routes.js';
import { HealthService } from './health/service.js';
import { chatwootModule } from './integrations/chatwoot/index.js';
import { mcpModule } from './mcp/module.js';
import { failoverModule } from './admin/failover/module.js';
import { adminOpsModule } from './admin/ops/index.js';
import { alertsModule } from './admin/alerts/index.js';
import { backfillModule } from './admin/backfill/index.js';
import { authModule } from './auth/module.js';
import { webModule } from './web/module.js';

/**
 * Feature modules, in order: each adds its routes, credentials, sinks and background work (see
 * src/modules.ts and docs/architecture.md). Routes register in this order; `start` runs in this
 * order once the process is active, `stop` in reverse.
 */
const FEATURES: ModuleFactory[] = [
  serverModule,
  instancesModule,
  sendingModule,
  messagesModule,
  deliveryModule,
  sandboxModule,
  chatsModule,
  groupsModule,
  usersModule,
  labelsModule,
  newslettersModule,
  communitiesModule,
  callsModule,
  authModule,
  chatwootModule,
  mcpModule,
  failoverModule,
  adminOpsModule,
  alertsModule,
  backfillModule,
  // The web interface last: its `/*` fallback answers only what no other route claims.
  webModule,
];

export interface GatewayOptions {
  clock?: Clock;
  /** Defaults to a pino logger at the configured level. */
  logger?: FastifyBaseLogger;
  storage?: OpenOptions;
  /** Waits of the outbox retries and of /send/batch pacing (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
  /**
   * The gateway can no longer run safely as the active process (its lease connection was lost, or
   * taking over failed). It has stopped holding sessions by the time this runs; main.ts exits so a
   * supervisor restarts it. Without it the gateway closes itself.
   */
  onFatal?: (error: Error) => void;
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
  /** Broker event channels (durable sinks) and the cross-process relay, as configured. */
  channels: Channels;
  sandbox: SandboxNetwork;
  /** Media bytes of sent and received messages (local folder or S3). */
  media: MediaStore;
  /** Media request bodies held in memory now (MEDIA_INFLIGHT_MAX_BYTES). */
  mediaAdmission: MediaAdmission;
  /** Cluster mode only (src/cluster/): this process as a member. */
  cluster: Cluster | undefined;
  /** Starts listening; resolves with the base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const admin = resolveAdminKey(config.globalApiKey, config.dataDir);
  const log = options.logger ?? createLogger(config.logLevel);
  const storage = await openStorage(config.databaseUrl, {
    ...(options.storage ?? (config.databaseSchema ? { schema: config.databaseSchema } : { checkpointInBackground: true })),
    preparedStatements: config.databasePreparedStatements,
    onConnectionLost: (error) =>
      log.warn({ err: error }, 'a database connection ended; its statement fails with 503 and the next one opens a new connection'),
  });

  // Webhook URLs an instance token sets must reach public addresses unless WEBHOOK_ALLOW_PRIVATE_URLS.
  const webhookGuard = config.webhook.allowPrivateUrls ? undefined : (url: string) => nonPublicTarget(new URL(url));
  const instances = new InstanceService(new InstanceRepo(storage.db), clock, config.tokenGraceSeconds, config.tokenCache, webhookGuard);
  const outbox = new OutboxStore(storage.db);
  const deadLetterStore = new DeadLetterStore(storage.db);
  const webhook = new WebhookSink({
    timeoutMs: config.webhook.timeoutMs,
    retry: { maxAttempts: config.webhook.maxAttempts, baseDelayMs: config.webhook.retryBaseMs, maxDelayMs: config.webhook.retryMaxMs },
    userAgent: `Waygate/${VERSION}`,
    allowPrivate: config.webhook.allowPrivateUrls,
    deliveryThread: config.webhook.deliveryThread,
  });
  // Set once the gateway exists: what to do when it must stop being the active process.
  let fatal: (error: Error) => void = () => undefined;
  // What to do when the lock's connection fails: stop (active/standby), or in cluster mode stop
  // leading while still serving its instances (set once it leads).
  let lockLost: (error: Error) => void = (error) => fatal(error);
  const lease = await acquireActiveLease(
    config.databaseUrl,
    options.storage?.schema ?? config.databaseSchema,
    config.standbyPollMs,
    log,
    (error) => lockLost(error),
    { rejoin: config.cluster !== undefined },
  );
  // Rate-limit counters only: fail fast while Redis is away (the store falls back to memory).
  const redis = config.kvStoreUrl
    ? new (await import('ioredis')).Redis(config.kvStoreUrl, {
        lazyConnect: false,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        commandTimeout: 500,
      })
    : undefined;
  let redisErrorLogged = false;
  redis?.on('error', (error: Error) => {
    if (redisErrorLogged) return;
    redisErrorLogged = true;
    log.warn({ err: error.message }, 'rate-limit Redis unreachable; limits are per process until it is back');
  });
  redis?.on('ready', () => {
    redisErrorLogged = false;
  });
  // Share limits from the first request when Redis is there; start anyway (per-process limits) when it is not.
  if (redis) await readyWithin(redis, 2000);
  const rateLimitStore: SlidingWindowStore = redis
    ? new RedisWindowStore(redis, `${config.kvStorePrefix}ratelimit:`, (shared, error) => {
        if (shared) log.info('rate limits shared through Redis again');
        else if (error) log.warn({ err: error.message }, 'rate-limit Redis command failed; using per-process limits');
      })
    : new MemoryWindowStore();
  const hub = new WebSocketHub(config.websocket.maxBufferedBytes, config.websocket.pingIntervalMs, {
    clock,
    maxPerInstance: config.websocket.maxConnectionsPerInstance,
    tokenState: (hash) => instances.tokenState(hash),
  });
  instances.onRotation((id, graceUntil) => hub.tokenRotated(id, graceUntil));
  // The hub also receives the live events other gateway processes relay (when a relay is configured).
  const channels = await createChannels(config, log, hub);
  const durableSinks: DurableSink[] = [webhook, ...channels.durable];

  const traffic = new TrafficMetrics();
  const dispatcher = new OutboxDispatcher({
    outbox,
    deadLetters: deadLetterStore,
    instances,
    sinks: durableSinks,
    clock,
    log: log,
    observer: traffic.deliveryObserver,
    ...(options.sleep ? { sleep: options.sleep } : {}),
  });
  const bus = new EventBus(outbox, dispatcher, durableSinks, instances, clock, log, { commitSpacingMs: config.eventCommitSpacingMs });
  bus.onStored((entry) => traffic.stored(entry));
  bus.addLiveSink(hub);
  for (const sink of channels.live) bus.addLiveSink(sink);

  const world = new SandboxNetwork(clock);
  // Groups, profiles, newsletters, ... of the sandbox, kept across restarts.
  const sandboxWorld = new SandboxWorld(world, new SqlWorldStore(storage.db, clock));
  await sandboxWorld.load();
  const sandboxDriver = new SandboxDriver(world, config.sandbox, sandboxWorld);
  const drivers: NetworkDriver[] = [sandboxDriver];
  if (config.whatsapp.enabled) {
    drivers.push(
      new WhatsAppDriver({
        db: storage.db,
        settings: whatsappSettings(config.whatsapp),
        // Read at every socket open and send, so a proxy or setting change applies without a restart.
        instanceConfig: async (id) => {
          const instance = await instances.get(id);
          return { proxyUrl: instance.proxyUrl, interactiveMessages: instance.settings.interactiveMessages === true };
        },
        // Polls, retries and forwards of messages older than the driver's in-memory window (called
        // only once sessions run, after messageStore below exists).
        sharedMessages: { find: (instanceId, messageId) => messageStore.find(instanceId, messageId) },
        // Chat history reads (and history-sync messages join) the same message store.
        chatMessages: {
          find: (instanceId, messageId) => messageStore.find(instanceId, messageId),
          save: (message) => messageStore.save(message),
          search: (instanceId, filter, page) => messageStore.search(instanceId, filter, page),
          latestOfChats: (instanceId, chats) => messageStore.latestOfChats(instanceId, chats),
        },
        logger: log,
        clock,
        // Bound late: the cluster is built once sessions exist, before any session opens.
        ...(config.cluster ? { fence: (trx: Parameters<WriteFence>[0], ids: string[]) => cluster!.node.fence(trx, ids) } : {}),
      }),
    );
  }
  const sessions = new SessionRegistry(drivers, instances, bus, log, sleep, () => clock.now());
  sessions.activeWhen(() => lease.role === 'active');
  // Cluster mode: every process is active for the instances it leases (src/cluster/); the lease
  // above only elects the leader, which serves admin routes and runs the deployment-wide jobs.
  const cluster = config.cluster
    ? await Cluster.create(config.cluster, config.kvStoreUrl!, config.kvStorePrefix, {
        storage,
        instances,
        sessions,
        bus,
        dispatcher,
        outbox,
        log,
        adminKey: admin.key,
      })
    : undefined;
  // In a cluster every process is active while it hears from the database (its leases are sure).
  const active = () => (cluster ? cluster.node.healthy() : lease.role === 'active');
  if (cluster) {
    // WebSocket clients of any process see every event (unless a broker relay does it already).
    if (!channels.relay) bus.addLiveSink(new EventRelay(cluster.topic('events'), hub, log));
    world.span(cluster.topic('sandbox'), log);
    sandboxWorld.share(cluster.topic('sandbox-world'), log);
  }
  instances.onDeletion(sessions);
  instances.onDeletion({ instanceDeleted: (id) => hub.disconnect(id, 4404, 'instance deleted') });

  // Media and the message store: every MESSAGE/SEND_MESSAGE is recorded (media kept, `data.media` added) before it is queued.
  const mediaStore = await createMediaStore(config, log);
  await mediaStore.start();
  const mediaFetcher = new MediaFetcher({
    timeoutMs: config.media.fetchTimeoutMs,
    allowPrivate: config.media.allowPrivateUrls,
    allowHttp: config.media.allowHttpUrls,
  });
  const mediaAdmission = new MediaAdmission(config.media.inflightMaxBytes);
  const messageStore = new MessageStore(storage.db);
  // A message row commits with its events: one commit per tick on the send road.
  bus.addCommitParticipant(messageStore);
  messageStore.shareCommits(() => bus.currentTick());
  // Sandbox chats keep their messages in memory; after a restart they are read back from the store.
  // A number linked again gets its history synced: the new instance's store keeps those messages too.
  sandboxWorld.useHistory({
    search: (instanceId, filter, page) => messageStore.search(instanceId, filter, page),
    add: async (instanceId, message) => {
      if (await messageStore.find(instanceId, message.key.id)) return;
      await messageStore.save({ instanceId, ...message, messageType: messageTypeOf(message.message), createdAt: clock.now() });
    },
  });
  const recorder = new MessageRecorder(messageStore, mediaStore, instances, config.media, clock, log);
  sessions.beforeQueue((instanceId, event) => recorder.record(instanceId, event));
  instances.onDeletion({
    instanceDeleted: (id) =>
      mediaStore
        .deletePrefix(`${id}/`)
        .catch((error: unknown) => log.warn({ err: error, instanceId: id }, 'could not delete instance media')),
  });
  const messaging = new MessagingService(sessions, instances, messageStore, mediaStore, new MediaResolver(config.media, mediaFetcher));
  const startedAt = Date.now();
  const deadLetters = new DeadLetterService(deadLetterStore, instances, webhook, clock, (name) => dispatcher.sink(name));
  const channelHealth = () => Object.fromEntries(durableSinks.flatMap((s) => (s.health ? [[s.name, s.health()]] : [])));
  const metrics = createMetricsRegistry(
    {
      instancesByStatus: () => instances.countByStatus(),
      pendingDeliveries: () => outbox.pendingBySink(),
      oldestPendingDeliveries: () => outbox.oldestPendingBySink(),
      deadLettersBySink: () => deadLetterStore.countBySink(),
      websocketClients: () => hub.count(),
      channels: channelHealth,
      active,
      now: () => clock.now(),
    },
    traffic,
  );

  // Health scores (src/health/): shared, since instance routes show them and failover groups pick by them.
  const health = new HealthService({ instances, clock, backlog: () => backlogCounts(storage.db), intervalMs: config.healthIntervalMs });
  health.watch(sessions, messaging);
  registerHealthMetric(metrics, health, instances);

  const resolvers = emptyResolvers();
  const moduleDeps: ModuleDeps = {
    config,
    clock,
    log,
    storage,
    instances,
    sessions,
    bus,
    dispatcher,
    outbox,
    deadLetters,
    webhook,
    channelHealth,
    hub,
    media: mediaStore,
    mediaAdmission,
    messages: messageStore,
    sending: messaging,
    health,
    resolvers,
    metrics,
    adminKey: admin.key,
    active,
    role: () => (active() ? 'active' : 'standby'),
    sandbox: { network: world, world: sandboxWorld },
    version: VERSION,
    startedAt,
    sleep,
    ...(cluster ? { clusterTopic: (name: string) => cluster.topic(name), clusterForwarding: cluster.routing } : {}),
  };
  const modules: GatewayModule[] = [];
  // GET /instance/health serves the shared score service (ModuleDeps carries only its HealthSource face).
  modules.push({ name: 'health', routes: [healthRoutes(health)] });
  for (const feature of FEATURES) modules.push(await feature(moduleDeps));

  const app = await buildApp({
    config,
    clock,
    adminKey: admin.key,
    instances,
    rateLimitStore,
    resolvers,
    // In a cluster no process stands by: a request goes where its instance is (the routing says).
    standby: () => !cluster && !active(),
    ...(cluster ? { routing: cluster.routing } : {}),
    onAnswered: (method, route, status, seconds) => traffic.answered(method, route, status, seconds),
    logger: log,
    rootRoutes: modules.flatMap((m) => m.rootRoutes ?? []),
    routes: modules.flatMap((m) => m.routes ?? []),
  });

  // Delivered events leave the outbox after OUTBOX_RETENTION_SECONDS, into the event archive
  // (backfills read it) for EVENT_ARCHIVE_DAYS.
  const pruneEvents = async () => {
    const archive = config.eventArchiveDays > 0;
    await outbox.prune(clock.now() - config.outboxRetentionSeconds * 1000, archive);
    if (archive) await outbox.pruneArchive(clock.now() - config.eventArchiveDays * 86_400_000);
  };
  // Deployment-wide jobs run in one process: the active one, or in a cluster the leader.
  const pruner = setInterval(() => {
    if (lease.role !== 'active') return;
    pruneEvents().catch((error: unknown) => log.warn({ err: error }, 'outbox prune failed'));
  }, 60_000);
  pruner.unref();
  // Stored messages and their media leave after MESSAGE_RETENTION_DAYS (0 keeps them).
  const pruneMessages = async () => {
    if (config.messageRetentionDays === 0) return;
    const before = clock.now() - config.messageRetentionDays * 86_400_000;
    for (let round = 0; round < 20; round += 1) {
      const { deleted, mediaKeys } = await messageStore.pruneBatch(before);
      if (mediaKeys.length > 0) await mediaStore.delete(mediaKeys);
      if (deleted === 0) return;
      await nextTurn(); // requests go between batches (SQLite runs each on the event loop)
    }
  };
  // Media files no message points at (a crash between writing a file and saving its message).
  const sweepOrphans = async () => {
    const removed = await sweepOrphanMedia(
      mediaStore,
      (keys) => messageStore.referencedMediaKeys(keys),
      clock.now() - config.media.orphanAgeSeconds * 1000,
    );
    if (removed > 0) log.info({ removed }, 'removed media files no message references');
  };
  const messagePruner = setInterval(() => {
    if (lease.role !== 'active') return;
    pruneMessages().catch((error: unknown) => log.warn({ err: error }, 'message prune failed'));
    sweepOrphans().catch((error: unknown) => log.warn({ err: error }, 'orphan media sweep failed'));
  }, 3_600_000);
  messagePruner.unref();

  let closed = false;
  const gateway: Gateway = {
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
    channels,
    sandbox: world,
    media: mediaStore,
    mediaAdmission,
    cluster,
    async listen() {
      await app.listen({ port: config.port, host: config.host });
      // Only the active process holds sessions and delivers; a standby takes over when it wins the lease.
      const takeOver = async () => {
        if (closed) return;
        await sessions.resumeAll();
        const waiting = await outbox.pendingOfUnknownSinks(durableSinks.map((sink) => sink.name));
        if (Object.keys(waiting).length > 0) {
          log.warn({ waiting }, 'events wait for channels that are not configured; set their URL again to deliver them');
        }
        await dispatcher.resume();
        void sweepOrphans().catch((error: unknown) => log.warn({ err: error }, 'orphan media sweep failed'));
        for (const module of modules) await module.start?.();
      };
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
      if (cluster) {
        // Sessions and lanes come with the leases; the leader runs the deployment-wide jobs.
        await cluster.start(host, port);
        const lead = async () => {
          if (closed) return;
          cluster.node.setLeader(true);
          for (const module of modules) await module.start?.();
        };
        // Leading and standing down take turns: a process that lost the lock and wins it again
        // starts the jobs once the old ones have stopped.
        let turns = Promise.resolve();
        const whenLeading = () => {
          turns = turns
            .then(() => lease.whenActive())
            .then(lead)
            .catch((error: unknown) => fatal(error instanceof Error ? error : new Error(String(error))));
        };
        lockLost = () => {
          cluster.node.setLeader(false);
          turns = turns.then(async () => {
            for (const module of [...modules].reverse()) {
              await module.standDown?.().catch((error: unknown) => log.warn({ err: error, module: module.name }, 'could not stand down'));
            }
          });
          whenLeading();
        };
        if (lease.role === 'active') {
          turns = lead();
          await turns;
        } else whenLeading();
      } else if (lease.role === 'active') await takeOver();
      else
        void lease
          .whenActive()
          .then(takeOver)
          .catch((error: unknown) => fatal(error instanceof Error ? error : new Error(String(error))));
      return `http://${host}:${port}`;
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(pruner);
      clearInterval(messagePruner);
      // Cluster mode: every instance is handed over cleanly first, while this process still answers
      // (and forwards) requests; only then does it stop listening.
      await cluster?.leave();
      await app.close();
      for (const module of [...modules].reverse()) await module.stop?.();
      await cluster?.close();
      await sessions.stop();
      await bus.settled();
      await messageStore.settled();
      await mediaFetcher.close();
      await mediaStore.close();
      // In-flight deliveries finish and are acknowledged before the lease goes (a standby would repeat them).
      await dispatcher.stop(config.webhook.timeoutMs + 2000);
      await hub.close();
      await channels.close();
      redis?.disconnect();
      await lease.close();
      await storage.close();
    },
  };
  fatal = (error) => {
    log.fatal({ err: error }, 'stopping: this process can no longer act as the active one for its database');
    const stopped = gateway.close().catch((closeError: unknown) => log.error({ err: closeError }, 'close failed'));
    if (options.onFatal) void stopped.then(() => options.onFatal?.(error));
  };
  return gateway;
}

function readyWithin(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
  });
}
