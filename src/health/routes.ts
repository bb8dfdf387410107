/** GET /instance/health: the calling instance's health score, reasons and signals. HTTP only. */
import { Gauge, type Registry } from 'prom-client';
import { errorResponses, INSTANCE } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import type { InstanceService } from '../instance-registry/service.js';
import * as S from './schema.js';
import type { HealthService } from './service.js';

export function healthRoutes(health: HealthService): RoutePlugin {
  return async (app) => {
    app.get(
      '/instance/health',
      {
        config: { access: 'instance' as const },
        schema: {
          tags: ['instance'],
          security: INSTANCE,
          summary: 'Health score of the calling instance',
          description:
            "A score from 0 to 100 with the reasons that lowered it and the signals behind it: connection state and why it last closed (on WhatsApp: banned, logged out, restart required...), connection losses in the last 15 minutes, send failures, refusals and mean send time in the last 5 minutes, events waiting for delivery and dead letters (counted at most every HEALTH_INTERVAL_MS). Failover groups send only through members whose score is at least the group's `minHealth`. The formula is in docs/operations.md.",
          response: { 200: S.HealthReport, ...errorResponses(401, 403) },
        },
      },
      async (request) => health.report(callerInstance(request).id),
    );
  };
}

/** `waygate_instance_health{instance}`: every instance's score when /metrics is scraped. */
export function registerHealthMetric(registry: Registry, health: HealthService, instances: InstanceService): void {
  new Gauge({
    name: 'waygate_instance_health',
    help: 'Health score of each instance (0-100; see docs/operations.md)',
    labelNames: ['instance'],
    registers: [registry],
    async collect() {
      this.reset();
      for (let offset = 0; ; offset += 500) {
        const { items } = await instances.list(offset, 500);
        for (const instance of items) this.set({ instance: instance.id }, (await health.scoreOfInstance(instance)).score);
        if (items.length < 500) return;
      }
    },
  });
}
