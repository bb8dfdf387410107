import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.js';
import { connectedInstance, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { WebhookReceiver } from '../../test/support/receiver.js';
import { ensurePromtool } from '../../scripts/promtool.mjs';

describe('configuration', () => {
  it('has embedded defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.databaseUrl).toMatch(/^sqlite:.*data\/waygate\.db$/);
    expect(config.tokenGraceSeconds).toBe(86_400);
    expect(config.corsOrigin).toBe('*');
    expect(config.trustProxy).toBe(false);
    expect(config.databasePreparedStatements).toBe(true);
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false);
  });

  it('TRUST_PROXY takes true, false, or addresses, CIDR ranges and the names proxy-addr knows', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'off' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: ' 10.0.0.0/8, 127.0.0.1 ,::1,fd00::/8,loopback' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
      'fd00::/8',
      'loopback',
    ]);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['TOKEN_GRACE_SECONDS', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['KV_STORE_URL', 'http://x'],
    ['QUEUE_BROKER_URL', 'nats://x'],
    ['LOG_LEVEL', 'loud'],
    ['GLOBAL_API_KEY', 'short'],
    ['KV_STORE_GLOBAL_EVENTS', 'maybe'],
    ['DATABASE_PREPARED_STATEMENTS', 'maybe'],
    ['DATABASE_SCHEMA', 'Bad-Schema'],
    ['TRUST_PROXY', '1'],
    ['TRUST_PROXY', 'proxy.example.com'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '127.0.0.1,'],
  ])('stops on an invalid %s naming the variable', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrowError(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrowError(new RegExp(`^${variable}:`));
  });
});

describe('metrics and outbox retention', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
  });
  afterAll(async () => gw.stop());

  it('exposes Prometheus metrics with instance and delivery gauges', async () => {
    await connectedInstance(gw, uniqueNumber());
    const res = await fetch(`${gw.url}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/^waygate_instances\{status="CONNECTED"\} [1-9]/m);
    expect(text).toContain('nodejs_heap_size_used_bytes');
    expect(text).toContain('waygate_websocket_clients 0');
  });

  it('counts requests, sends, events and deliveries, and promtool finds nothing to fix', async () => {
    const receiver = new WebhookReceiver();
    await receiver.start();
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      expect(
        (
          await gw.api('POST', '/api/v1/instance/webhook', {
            key: a.token,
            body: { webhookUrl: receiver.url, webhookEvents: ['SEND_MESSAGE'] },
          })
        ).status,
      ).toBe(200);
      const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'counted' } });
      expect(sent.status).toBe(200);
      expect((await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: 'x', text: '' } })).status).toBe(400);
      await waitFor(() => receiver.events('SEND_MESSAGE').find((e) => e.data.key.id === sent.body.key.id));
      const text = await waitFor(async () => {
        const body = await (await fetch(`${gw.url}/metrics`)).text();
        return /^waygate_deliveries_total\{sink="webhook",outcome="delivered"\} [1-9]/m.test(body) ? body : undefined;
      });
      expect(text).toMatch(/^waygate_http_requests_total\{method="POST",route="\/api\/v1\/send\/text",status="200"\} [1-9]/m);
      expect(text).toMatch(
        /^waygate_http_request_duration_seconds_bucket\{le="\+Inf",method="POST",route="\/api\/v1\/send\/text"\} [1-9]/m,
      );
      expect(text).toMatch(/^waygate_sends_total\{kind="text",outcome="accepted"\} [1-9]/m);
      expect(text).toMatch(/^waygate_sends_total\{kind="text",outcome="refused"\} [1-9]/m);
      expect(text).toMatch(/^waygate_events_total\{event="SEND_MESSAGE"\} [1-9]/m);
      expect(text).toMatch(/^waygate_delivery_duration_seconds_count\{sink="webhook"\} [1-9]/m);
      expect(text).toContain('# TYPE waygate_outbox_oldest_pending_age_seconds gauge');
      expect(text).toContain('# TYPE waygate_dead_letters gauge');
      expect(text).toMatch(/^waygate_instance_health\{instance="[^"]+"\} \d+/m);
      // Raw URLs never become labels (ids would make the series endless).
      expect(text).not.toContain(sent.body.key.id);

      // The Grafana dashboard and docs/metrics.md name only metrics that exist.
      const dashboard = fs.readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8');
      const documented = fs.readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
      const named = new Set(
        [...`${dashboard}${documented}`.matchAll(/\b(waygate_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, '')),
      );
      for (const name of named) expect(text, name).toContain(`# TYPE ${name} `);
      for (const [, name] of text.matchAll(/^# TYPE (waygate_[a-z_]+) /gm)) expect(documented, name).toContain(`\`${name}\``);

      const check = spawnSync(ensurePromtool(), ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(`${check.stdout}${check.stderr}`).toBe('');
      expect(check.status).toBe(0);
    } finally {
      await receiver.stop();
    }
  });

  it('answers readiness without a key: 200 with storage up on the active process', async () => {
    const res = await fetch(`${gw.url}/api/v1/server/ready`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ready: true, role: 'active', storage: { up: true }, degraded: false });
  });

  it('prunes delivered events past the retention', async () => {
    await connectedInstance(gw, uniqueNumber());
    await gw.bus.settled();
    const before = await gw.storage.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(before.n)).toBeGreaterThan(0);
    expect(await gw.outbox.prune(Date.now() + 1000)).toBe(Number(before.n));
  });
});

describe('readiness', () => {
  it('says degraded when a configured channel is down, and 503 when the database is gone', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const gw = await startGateway({ env: { QUEUE_BROKER_URL: `amqp://guest:guest@127.0.0.1:${port}` } });
    try {
      const degraded = await fetch(`${gw.url}/api/v1/server/ready`);
      expect(degraded.status).toBe(200);
      expect(await degraded.json()).toMatchObject({ ready: true, degraded: true, channels: { amqp: { up: false } } });
      await gw.storage.close();
      const down = await fetch(`${gw.url}/api/v1/server/ready`);
      expect(down.status).toBe(503);
      expect(await down.json()).toMatchObject({ ready: false, storage: { up: false } });
      // Liveness stays up: the process is alive, it just cannot serve.
      expect((await fetch(`${gw.url}/api/v1/server/ok`)).status).toBe(200);
    } finally {
      await gw.stop().catch(() => undefined);
    }
  });
});
