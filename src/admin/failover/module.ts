/** Failover groups (docs/operations.md): admin routes, the group-token credential, the send router and group webhooks. */
import { randomUUID } from 'node:crypto';
import { WebhookSink } from '../../events/sinks/webhook.js';
import type { ModuleFactory } from '../../modules.js';
import { VERSION } from '../../version.js';
import { FailoverRepo } from './repo.js';
import { failoverRoutes } from './routes.js';
import { FailoverService } from './service.js';
import { GroupWebhookSink } from './sink.js';

/** Cluster mode: how often each process reads the groups again, in case a change notice was lost. */
const GROUPS_REFRESH_MS = 60_000;

export const failoverModule: ModuleFactory = async (deps) => {
  const { config } = deps;
  // Without a health source every connected member counts as healthy.
  const health = deps.health ?? { scoreOf: () => Promise.resolve({ score: 100, reasons: [] }) };
  const webhook = new WebhookSink({
    timeoutMs: config.webhook.timeoutMs,
    retry: { maxAttempts: config.webhook.maxAttempts, baseDelayMs: config.webhook.retryBaseMs, maxDelayMs: config.webhook.retryMaxMs },
    userAgent: `Waygate/${VERSION}`,
  });
  const sinks = new Set<string>();
  // Cluster mode: a change made by one process is read again by the others (docs/deployment.md).
  const changes = deps.clusterTopic?.('failover');
  const origin = randomUUID();
  const failover: FailoverService = new FailoverService({
    repo: new FailoverRepo(deps.storage.db),
    instances: deps.instances,
    health,
    clock: deps.clock,
    log: deps.log,
    tokenGraceSeconds: config.tokenGraceSeconds,
    // Each group gets its own durable sink, added before lanes resume (so a restart delivers what waits).
    groupAdded: (groupId) => {
      if (sinks.has(groupId)) return;
      sinks.add(groupId);
      deps.bus.addDurableSink(new GroupWebhookSink(groupId, failover, webhook));
    },
    ...(changes ? { changed: () => changes.publish(origin) } : {}),
    ...(deps.clusterForwarding ? { forwarding: deps.clusterForwarding } : {}),
  });
  await failover.loadAll();
  const reload = (why: string) =>
    failover.loadAll().catch((error: unknown) => deps.log.warn({ err: error }, `could not read the failover groups again (${why})`));
  changes?.subscribe((from) => {
    if (from !== origin) void reload('changed by another process');
  });
  // Pub/sub may drop a message (Redis away for a moment): every process also reads them again each minute.
  const refresh = changes ? setInterval(() => void reload('periodic'), GROUPS_REFRESH_MS) : undefined;
  refresh?.unref();
  // Read while active: nobody else writes the groups, so there is nothing to read again at start.
  let current = deps.active();
  deps.resolvers.instance.push((key, request, keyHash) => failover.resolve(key, request, keyHash));
  // Retrying a refused send on the next member needs the built message and each attempt's outcome:
  // the sending service routes through us rather than a wrapper around the routes.
  deps.sending.routeWith(failover);
  deps.instances.onDeletion({ instanceDeleted: (id) => failover.instanceDeleted(id) });
  return {
    name: 'failover',
    routes: [failoverRoutes(failover)],
    async start() {
      // A standby taking over reads again what the active process changed meanwhile, and delivers
      // what waits for groups it had not seen.
      if (current) return;
      current = true;
      const known = sinks.size;
      await failover.loadAll();
      if (sinks.size > known) await deps.dispatcher.resume();
    },
    stop: () => {
      clearInterval(refresh);
      return failover.settled();
    },
  };
};
