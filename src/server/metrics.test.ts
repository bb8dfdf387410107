/** Traffic counters: each answer counts once in the series of its method, route and status. */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TrafficMetrics } from './metrics.js';

async function values(registry: Registry, name: string) {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name)!;
  // A histogram's values name their series (`_bucket`, `_count`, `_sum`); a counter's do not.
  return (metric.values as { labels: Record<string, string | number>; value: number; metricName?: string }[]).map(
    ({ labels, value, metricName }) => ({ labels, value, metricName }),
  );
}

describe('traffic metrics', () => {
  it('counts each answer in its own series, the same series again on the next answer', async () => {
    const traffic = new TrafficMetrics();
    const registry = new Registry();
    traffic.register(registry);
    traffic.answered('POST', '/api/v1/send/text', 200, 0.002);
    traffic.answered('POST', '/api/v1/send/text', 200, 0.02);
    traffic.answered('POST', '/api/v1/send/text', 400, 0.001);
    traffic.answered('GET', '/api/v1/chat/:id', 200, 0.003);
    traffic.answered('GET', undefined, 404, 0.001);

    expect(await values(registry, 'waygate_http_requests_total')).toEqual([
      { labels: { method: 'POST', route: '/api/v1/send/text', status: '200' }, value: 2, metricName: undefined },
      { labels: { method: 'POST', route: '/api/v1/send/text', status: '400' }, value: 1, metricName: undefined },
      { labels: { method: 'GET', route: '/api/v1/chat/:id', status: '200' }, value: 1, metricName: undefined },
      { labels: { method: 'GET', route: 'unmatched', status: '404' }, value: 1, metricName: undefined },
    ]);
    expect(await values(registry, 'waygate_sends_total')).toEqual([
      { labels: { kind: 'text', outcome: 'accepted' }, value: 2, metricName: undefined },
      { labels: { kind: 'text', outcome: 'refused' }, value: 1, metricName: undefined },
    ]);
    const durations = await values(registry, 'waygate_http_request_duration_seconds');
    const count = (method: string, route: string) =>
      durations.find(
        (d) => d.metricName === 'waygate_http_request_duration_seconds_count' && d.labels.method === method && d.labels.route === route,
      )?.value;
    expect(count('POST', '/api/v1/send/text')).toBe(3);
    expect(count('GET', '/api/v1/chat/:id')).toBe(1);
    const under5ms = durations.find(
      (d) =>
        d.metricName === 'waygate_http_request_duration_seconds_bucket' && d.labels.route === '/api/v1/send/text' && d.labels.le === 0.005,
    );
    expect(under5ms?.value).toBe(2);

    // Reading again gives the same counts; the next answer adds one.
    const sendsNow = [
      { labels: { kind: 'text', outcome: 'accepted' }, value: 2, metricName: undefined },
      { labels: { kind: 'text', outcome: 'refused' }, value: 1, metricName: undefined },
    ];
    expect(await values(registry, 'waygate_sends_total')).toEqual(sendsNow);
    traffic.answered('POST', '/api/v1/send/text', 500, 0.001);
    expect(await values(registry, 'waygate_sends_total')).toEqual([
      ...sendsNow,
      { labels: { kind: 'text', outcome: 'failed' }, value: 1, metricName: undefined },
    ]);
    expect((await values(registry, 'waygate_http_requests_total')).map((v) => v.value)).toEqual([2, 1, 1, 1, 1]);
  });

  it('counts stored events by type', async () => {
    const traffic = new TrafficMetrics();
    const registry = new Registry();
    traffic.register(registry);
    const entry = (type: 'MESSAGE' | 'SEND_MESSAGE') =>
      ({ seq: 1, eventId: 'e', instanceId: 'i', instanceName: 'n', type, body: '{}', createdAt: 0 }) as const;
    traffic.stored(entry('SEND_MESSAGE'));
    traffic.stored(entry('MESSAGE'));
    traffic.stored(entry('SEND_MESSAGE'));
    expect(await values(registry, 'waygate_events_total')).toEqual([
      { labels: { event: 'SEND_MESSAGE' }, value: 2, metricName: undefined },
      { labels: { event: 'MESSAGE' }, value: 1, metricName: undefined },
    ]);
    expect(await values(registry, 'waygate_events_total')).toHaveLength(2);
  });
});
