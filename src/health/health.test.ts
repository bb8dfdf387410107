import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, createInstance, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { ManualClock } from '../clock.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import type { BacklogCounts } from './repo.js';
import { FLAP_WINDOW_MS, HealthService, healthScore, SEND_WINDOW_MS, type HealthSignals } from './service.js';

const healthy: HealthSignals = {
  status: 'CONNECTED',
  lastDisconnect: null,
  flaps: 0,
  sends: 0,
  failures: 0,
  refusals: 0,
  latencyMs: null,
  backlog: 0,
  deadLetters: 0,
};

describe('health score formula', () => {
  it('is 100 with no reasons for a connected, quiet instance', () => {
    expect(healthScore(healthy)).toEqual({ score: 100, reasons: [] });
  });

  it('takes the connection state, or the class of the last disconnect when it says more', () => {
    expect(healthScore({ ...healthy, status: 'DISCONNECTED', lastDisconnect: 'connection_lost' })).toEqual({
      score: 30,
      reasons: ['disconnected: connection_lost (-70)'],
    });
    expect(healthScore({ ...healthy, status: 'DISCONNECTED', lastDisconnect: 'banned_or_blocked' }).score).toBe(0);
    expect(healthScore({ ...healthy, status: 'DISCONNECTED', lastDisconnect: 'connection_replaced' }).score).toBe(10);
    expect(healthScore({ ...healthy, status: 'CONNECTING', lastDisconnect: 'restart_required' }).score).toBe(80);
    expect(healthScore({ ...healthy, status: 'CONNECTING', lastDisconnect: null }).score).toBe(60);
    expect(healthScore({ ...healthy, status: 'LOGGED_OUT', lastDisconnect: 'logged_out_from_phone' })).toEqual({
      score: 0,
      reasons: ['logged out: logged_out_from_phone (-100)'],
    });
    expect(healthScore({ ...healthy, status: 'created' }).score).toBe(0);
  });

  it('takes 10 per connection loss in the window, at most 30', () => {
    expect(healthScore({ ...healthy, flaps: 2 })).toEqual({ score: 80, reasons: ['2 connection loss(es) in 15 min (-20)'] });
    expect(healthScore({ ...healthy, flaps: 7 }).score).toBe(70);
  });

  it('scales failures (60) and refusals (30) by their share of sends, over at least 5 sends', () => {
    expect(healthScore({ ...healthy, sends: 10, failures: 5 })).toEqual({ score: 70, reasons: ['5 of 10 sends failed in 5 min (-30)'] });
    expect(healthScore({ ...healthy, sends: 10, refusals: 10 }).score).toBe(70);
    // Every send failing puts an instance below the default minHealth of 50.
    expect(healthScore({ ...healthy, sends: 20, failures: 20 }).score).toBe(40);
    // One failed send out of one is not yet a failing instance.
    expect(healthScore({ ...healthy, sends: 1, failures: 1 }).score).toBe(88);
  });

  it('takes steps for slow sends, a delivery backlog and dead letters', () => {
    expect(healthScore({ ...healthy, latencyMs: 800 }).score).toBe(100);
    expect(healthScore({ ...healthy, latencyMs: 1500 }).score).toBe(95);
    expect(healthScore({ ...healthy, latencyMs: 2500 }).score).toBe(90);
    expect(healthScore({ ...healthy, latencyMs: 6000 })).toEqual({ score: 80, reasons: ['mean send time 6000 ms (-20)'] });
    expect(healthScore({ ...healthy, backlog: 150 }).score).toBe(95);
    expect(healthScore({ ...healthy, backlog: 5000 }).score).toBe(85);
    expect(healthScore({ ...healthy, deadLetters: 1 }).score).toBe(95);
    expect(healthScore({ ...healthy, deadLetters: 500 }).score).toBe(90);
  });

  it('never goes below 0 and lists every reason', () => {
    const worst = healthScore({
      status: 'DISCONNECTED',
      lastDisconnect: 'connection_lost',
      flaps: 3,
      sends: 10,
      failures: 5,
      refusals: 5,
      latencyMs: 9000,
      backlog: 2000,
      deadLetters: 200,
    });
    expect(worst.score).toBe(0);
    expect(worst.reasons).toHaveLength(7);
  });
});

describe('health service signals', () => {
  function service(counts: BacklogCounts = { backlog: new Map(), deadLetters: new Map() }) {
    const clock = new ManualClock();
    const instance = { id: 'i1', status: 'CONNECTED' } as Instance;
    let reads = 0;
    const health = new HealthService({
      instances: { get: () => Promise.resolve(instance) } as unknown as InstanceService,
      clock,
      backlog: () => {
        reads += 1;
        return Promise.resolve(counts);
      },
      intervalMs: 5000,
    });
    return { health, clock, instance, reads: () => reads };
  }

  it('follows CONNECTION events ahead of the stored status and forgets losses after the window', async () => {
    const { health, clock } = service();
    health.connectionChanged('i1', { status: 'CONNECTED', number: '1' });
    health.connectionChanged('i1', { status: 'DISCONNECTED', reason: 'connection_lost' });
    expect(await health.scoreOf('i1')).toEqual({
      score: 20,
      reasons: ['disconnected: connection_lost (-70)', '1 connection loss(es) in 15 min (-10)'],
    });
    health.connectionChanged('i1', { status: 'CONNECTING', reason: 'reconnecting' });
    health.connectionChanged('i1', { status: 'CONNECTED', reason: 'reconnected' });
    expect((await health.scoreOf('i1')).score).toBe(90);
    clock.advance(FLAP_WINDOW_MS + 1);
    expect((await health.scoreOf('i1')).score).toBe(100);
  });

  it('counts send failures, refusals and latency within the sliding window; bad input does not count', async () => {
    const { health, clock } = service();
    for (let i = 0; i < 5; i++) health.sendAttempted({ instanceId: 'i1', outcome: 'sent', ms: 3000 });
    for (let i = 0; i < 5; i++) health.sendAttempted({ instanceId: 'i1', outcome: 'failed', ms: 10, code: 'network_error' });
    health.sendAttempted({ instanceId: 'i1', outcome: 'rejected', ms: 1, code: 'bad_request' });
    const report = await health.report('i1');
    expect(report.signals).toMatchObject({ sends: 10, failures: 5, refusals: 0, latencyMs: 3000 });
    expect(report.score).toBe(100 - 30 - 10);
    clock.advance(SEND_WINDOW_MS + 1);
    expect((await health.report('i1')).signals).toMatchObject({ sends: 0, latencyMs: null });
  });

  it('counts a send the network rejected after accepting it (SEND_MESSAGE FAILED) as a failure', async () => {
    const { health } = service();
    health.sendAttempted({ instanceId: 'i1', outcome: 'sent', ms: 5 });
    health.sendFailedLater('i1');
    expect((await health.report('i1')).signals).toMatchObject({ sends: 1, failures: 1 });
    for (let i = 0; i < 6; i++) health.sendFailedLater('i1');
    // Never more than the whole failure penalty.
    expect((await health.scoreOf('i1')).score).toBe(40);
  });

  it('reads backlog counts at most once per interval', async () => {
    const { health, clock, reads } = service({ backlog: new Map([['i1', 150]]), deadLetters: new Map([['i1', 2]]) });
    expect(await health.scoreOf('i1')).toEqual({ score: 90, reasons: ['150 events waiting for delivery (-5)', '2 dead letters (-5)'] });
    await health.scoreOf('i1');
    expect(reads()).toBe(1);
    clock.advance(5001);
    await health.scoreOf('i1');
    expect(reads()).toBe(2);
  });
});

describe('health on the API', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ env: { SANDBOX_RECONNECT_DELAY_MS: '60000', HEALTH_INTERVAL_MS: '100' } });
  });
  afterAll(async () => gw.stop());

  it('shows the score in /instance/status, /instance/all, /instance/health and /metrics', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const fresh = await createInstance(gw);
    expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body.health).toEqual({ score: 100, reasons: [] });
    const all = await gw.api('GET', '/api/v1/instance/all?limit=500', { key: gw.adminKey });
    expect(all.body.items.find((i: any) => i.instanceId === fresh.id).health).toEqual({ score: 0, reasons: ['never connected (-100)'] });

    const sent = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'timed' } });
    expect(sent.body.instanceId).toBe(a.id);
    const report = await gw.api('GET', '/api/v1/instance/health', { key: a.token });
    expect(report.status).toBe(200);
    expect(report.body).toMatchObject({
      instanceId: a.id,
      score: 100,
      reasons: [],
      signals: { status: 'CONNECTED', sends: 1, failures: 0, refusals: 0, flaps: 0 },
    });
    expect(report.body.signals.latencyMs).toBeGreaterThanOrEqual(0);
    expect((await gw.api('GET', '/api/v1/instance/health', { key: gw.adminKey })).status).toBe(403);

    expect((await gw.api('POST', '/api/v1/sandbox/drop', { key: gw.adminKey, body: { instanceId: a.id } })).status).toBe(200);
    const after = await waitFor(async () => {
      const body = (await gw.api('GET', '/api/v1/instance/status', { key: a.token })).body;
      return body.status === 'DISCONNECTED' ? body : undefined;
    });
    expect(after.health).toEqual({ score: 20, reasons: ['disconnected: connection_lost (-70)', '1 connection loss(es) in 15 min (-10)'] });

    const metrics = await fetch(`${gw.url}/metrics`).then((r) => r.text());
    expect(metrics).toContain(`waygate_instance_health{instance="${a.id}"} 20`);
    expect(metrics).toContain(`waygate_instance_health{instance="${fresh.id}"} 0`);
  });

  it('lowers the score of an instance whose events wait for a webhook that fails', async () => {
    const a = await connectedInstance(gw, uniqueNumber(), { webhookUrl: 'http://127.0.0.1:9/never' });
    for (let i = 0; i < 3; i++)
      await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `x${i}` } });
    const report = await waitFor(async () => {
      const body = (await gw.api('GET', '/api/v1/instance/health', { key: a.token })).body;
      return body.signals.backlog + body.signals.deadLetters > 0 ? body : undefined;
    });
    expect(report.signals.backlog + report.signals.deadLetters).toBeGreaterThan(0);
  });
});
