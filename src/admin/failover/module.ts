/** Failover groups (docs/operations.md): admin routes, the group-token credential, the send router and group webhooks. */
import { WebhookSink } from '../../events/sinks/webhook.js';
import type { ModuleFactory } from '../../modules.js';
import { VERSION } from '../../version.js';
import { FailoverRepo } from './repo.js';
import { failoverRoutes } from './routes.js';
import { FailoverService } from './service.js';
import { GroupWebhookSink } from './sink.js';

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
  });
  await failover.loadAll();
  // Read while active: nobody else writes the groups, so there is nothing to read again at start.
  let current = deps.active();
  deps.resolvers.instance.push((key, request) => failover.resolve(key, request));
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
    stop: () => failover.settled(),
  };
};
