/** Alerts: rules evaluated periodically by the active process, alerts, signed notices (docs/operations.md). */
import { Gauge } from 'prom-client';
import type { ModuleFactory } from '../../modules.js';
import { AlertRepo } from './repo.js';
import { alertRoutes } from './routes.js';
import { AlertService } from './service.js';

export const alertsModule: ModuleFactory = (deps) => {
  const alerts = new AlertService({
    repo: new AlertRepo(deps.storage.db),
    clock: deps.clock,
    instances: deps.instances,
    outbox: deps.outbox,
    deadLetters: deps.deadLetters,
    webhook: deps.webhook,
    channelHealth: () => deps.channelHealth(),
    health: deps.health,
    retry: {
      maxAttempts: deps.config.webhook.maxAttempts,
      baseDelayMs: deps.config.webhook.retryBaseMs,
      maxDelayMs: deps.config.webhook.retryMaxMs,
    },
    log: deps.log,
    allowPrivateUrls: deps.config.webhook.allowPrivateUrls,
  });
  new Gauge({
    name: 'waygate_alerts_open',
    help: 'Open alerts',
    registers: [deps.metrics],
    async collect() {
      this.set((await alerts.listAlerts({ status: 'open' }, 0, 1)).total);
    },
  });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let leading = false;
  // One round at a time: the next is scheduled when the previous ends.
  const tick = () => {
    running = alerts
      .evaluate()
      .catch((error: unknown) => deps.log.warn({ err: error }, 'alert evaluation failed'))
      .finally(() => {
        running = undefined;
        if (!stopped && leading) timer = setTimeout(tick, deps.config.admin.alertEvalIntervalMs);
      });
  };
  const halt = async () => {
    leading = false;
    if (timer) clearTimeout(timer);
    timer = undefined;
    await running;
  };
  return {
    name: 'alerts',
    routes: [alertRoutes(alerts)],
    start() {
      // Only the active process evaluates (start runs when it becomes active).
      leading = true;
      if (!stopped && !timer && !running) timer = setTimeout(tick, deps.config.admin.alertEvalIntervalMs);
      return Promise.resolve();
    },
    standDown: halt,
    async stop() {
      stopped = true;
      await halt();
    },
  };
};
