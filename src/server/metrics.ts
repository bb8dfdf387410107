/**
 * /metrics in Prometheus text format (prom-client): process and Node.js defaults, Waygate's gauges
 * (read when scraped) and its traffic counters (TrafficMetrics, counted as things happen). Open like
 * /server/ok: it shows counts, never keys or contents. docs/metrics.md lists every metric.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { DeliveryObserver } from '../events/dispatcher.js';
import type { OutboxEntry } from '../events/envelope.js';
import type { RoutePlugin } from '../http/types.js';

export interface MetricsSource {
  instancesByStatus(): Promise<Record<string, number>>;
  pendingDeliveries(): Promise<Record<string, number>>;
  /** Creation time (epoch ms) of the oldest event each sink has yet to deliver. */
  oldestPendingDeliveries(): Promise<Record<string, number>>;
  deadLettersBySink(): Promise<Record<string, number>>;
  websocketClients(): number;
  channels(): Record<string, { up: boolean }>;
  active(): boolean;
  now(): number;
}

/**
 * prom-client's defaults name three gauges `*_total`, which Prometheus reserves for counters
 * (promtool refuses them); their per-type twins without the suffix stay.
 */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SEND_PREFIX = '/api/v1/send/';

/**
 * Counts under up to three label values the caller already holds: route templates, methods, status
 * codes, event types (the same strings every time, whose hashes V8 keeps), so counting is a few
 * Map lookups. prom-client's `inc` joins the labels into a new string and hashes it on every call,
 * ~1 % of the send road's main thread; the counts are handed to it when /metrics is read.
 */
class Tally<A, B = null, C = null> {
  private readonly counts = new Map<A, Map<B, Map<C, number>>>();

  add(a: A, b: B, c: C): void {
    let byB = this.counts.get(a);
    if (!byB) this.counts.set(a, (byB = new Map()));
    let byC = byB.get(b);
    if (!byC) byB.set(b, (byC = new Map()));
    byC.set(c, (byC.get(c) ?? 0) + 1);
  }

  /** Sets `counter` to these counts, one series per combination (in the order first counted). */
  copyTo<L extends string>(counter: Counter<L>, labelsOf: (a: A, b: B, c: C) => Partial<Record<L, string>>): void {
    counter.reset();
    for (const [a, byB] of this.counts) for (const [b, byC] of byB) for (const [c, count] of byC) counter.inc(labelsOf(a, b, c), count);
  }
}

function sendOutcome(status: number): 'accepted' | 'refused' | 'failed' {
  return status < 400 ? 'accepted' : status < 500 ? 'refused' : 'failed';
}

/** What happens, counted as it happens: requests, sends, events and deliveries. */
export class TrafficMetrics {
  private readonly requestCounts = new Tally<string, string, number>();
  private readonly sendCounts = new Tally<string, 'accepted' | 'refused' | 'failed'>();
  private readonly eventCounts = new Tally<string>();
  private readonly requests: Counter<'method' | 'route' | 'status'> = new Counter({
    name: 'waygate_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status code',
    labelNames: ['method', 'route', 'status'],
    registers: [],
    collect: () => this.requestCounts.copyTo(this.requests, (route, method, status) => ({ method, route, status: String(status) })),
  });
  private readonly requestDuration = new Histogram({
    name: 'waygate_http_request_duration_seconds',
    help: 'Time from receiving a request to answering it, by method and route template',
    labelNames: ['method', 'route'],
    buckets: LATENCY_BUCKETS,
    registers: [],
  });
  private readonly sends: Counter<'kind' | 'outcome'> = new Counter({
    name: 'waygate_sends_total',
    help: 'Send requests (POST /send/...) by kind and outcome: accepted (2xx), refused (4xx), failed (5xx)',
    labelNames: ['kind', 'outcome'],
    registers: [],
    collect: () => this.sendCounts.copyTo(this.sends, (template, outcome) => ({ kind: template.slice(SEND_PREFIX.length), outcome })),
  });
  private readonly events: Counter<'event'> = new Counter({
    name: 'waygate_events_total',
    help: 'Events stored in the outbox, by event type',
    labelNames: ['event'],
    registers: [],
    collect: () => this.eventCounts.copyTo(this.events, (event) => ({ event })),
  });
  private readonly deliveries = new Counter({
    name: 'waygate_deliveries_total',
    help: 'Delivery attempts by sink and outcome: delivered, failed (retried later), dead_lettered (gave up); a batch counts its events',
    labelNames: ['sink', 'outcome'],
    registers: [],
  });
  private readonly deliveryDuration = new Histogram({
    name: 'waygate_delivery_duration_seconds',
    help: 'Time of one delivery attempt (one event, or one batch), by sink',
    labelNames: ['sink'],
    buckets: LATENCY_BUCKETS,
    registers: [],
  });

  register(registry: Registry): void {
    const metrics: Metric[] = [this.requests, this.requestDuration, this.sends, this.events, this.deliveries, this.deliveryDuration];
    for (const metric of metrics) {
      registry.registerMetric(metric);
    }
  }

  /** `route` is the route's template (`/api/v1/chat/:id`), never the raw URL: labels stay few. */
  answered(method: string, route: string | undefined, status: number, seconds: number): void {
    const template = route ?? 'unmatched';
    this.requestCounts.add(template, method, status);
    this.requestDuration.observe({ method, route: template }, seconds);
    if (method === 'POST' && template.startsWith(SEND_PREFIX)) this.sendCounts.add(template, sendOutcome(status), null);
  }

  stored(entry: OutboxEntry): void {
    this.eventCounts.add(entry.type, null, null);
  }

  readonly deliveryObserver: DeliveryObserver = {
    attempted: (sink, events, outcome, seconds) => {
      this.deliveries.inc({ sink, outcome }, events);
      this.deliveryDuration.observe({ sink }, seconds);
    },
    deadLettered: (sink, events) => this.deliveries.inc({ sink, outcome: 'dead_lettered' }, events),
  };
}

export function createMetricsRegistry(source: MetricsSource, traffic: TrafficMetrics): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  traffic.register(registry);
  new Gauge({
    name: 'waygate_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest event a sink has yet to deliver (0 when none waits), by sink',
    labelNames: ['sink'],
    registers: [registry],
    async collect() {
      this.reset();
      const now = source.now();
      for (const [sink, createdAt] of Object.entries(await source.oldestPendingDeliveries())) {
        this.set({ sink }, Math.max(0, (now - createdAt) / 1000));
      }
    },
  });
  new Gauge({
    name: 'waygate_dead_letters',
    help: 'Dead letters kept (deliveries that gave up), by sink',
    labelNames: ['sink'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [sink, n] of Object.entries(await source.deadLettersBySink())) this.set({ sink }, n);
    },
  });
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
