/**
 * /metrics in Prometheus text format (prom-client): process and Node.js defaults plus Waygate's
 * own gauges, read when scraped. Open like /server/ok: it shows counts, never keys or contents.
 */
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { RoutePlugin } from '../http/types.js';

export interface MetricsSource {
  instancesByStatus(): Promise<Record<string, number>>;
  pendingDeliveries(): Promise<Record<string, number>>;
  websocketClients(): number;
  channels(): Record<string, { up: boolean }>;
  active(): boolean;
}

export function createMetricsRegistry(source: MetricsSource): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'waygate_instances',
    help: 'Instances by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [status, n] of Object.entries(await source.instancesByStatus())) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'waygate_outbox_pending',
    help: 'Events stored but not yet acknowledged, by sink',
    labelNames: ['sink'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [sink, n] of Object.entries(await source.pendingDeliveries())) this.set({ sink }, n);
    },
  });
  new Gauge({
    name: 'waygate_active',
    help: 'This process holds the sessions and delivers events for its database (1), or stands by (0)',
    registers: [registry],
    collect() {
      this.set(source.active() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'waygate_websocket_clients',
    help: 'Connected WebSocket event clients',
    registers: [registry],
    collect() {
      this.set(source.websocketClients());
    },
  });
  new Gauge({
    name: 'waygate_channel_up',
    help: 'Event channel connection state (1 up, 0 down)',
    labelNames: ['channel'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [channel, state] of Object.entries(source.channels())) this.set({ channel }, state.up ? 1 : 0);
    },
  });
  return registry;
}

export function metricsRoutes(registry: Registry): RoutePlugin {
  return async (app) => {
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const body = await registry.metrics();
      return reply.type(registry.contentType).send(body);
    });
  };
}
