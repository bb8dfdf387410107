import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { privateRedis } from '../../test/support/brokers.js';
import { createInstance, startGateway, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { MemoryWindowStore } from './rate-limit.js';

describe('MemoryWindowStore', () => {
  it('slides: a request leaves the window exactly windowMs after it was made, answered at once', () => {
    const store = new MemoryWindowStore();
    expect(store.hit('k', 2, 1000, 0).allowed).toBe(true);
    expect(store.hit('k', 2, 1000, 500).allowed).toBe(true);
    const denied = store.hit('k', 2, 1000, 900);
    expect(denied).toEqual({ allowed: false, remaining: 0, retryAfter: 1 });
    expect(store.hit('k', 2, 1000, 1000).allowed).toBe(true); // the request at 0 left
    expect(store.hit('k', 2, 1000, 1100).allowed).toBe(false); // 500 and 1000 still inside
    expect(store.hit('other', 2, 1000, 1100).allowed).toBe(true);
  });
});

describe('rate limits over HTTP', () => {
  it('limits per API key with 429, retryAfter and Retry-After (memory store)', async () => {
    const clock = new ManualClock();
    const gw = await startGateway({ clock, env: { RATE_LIMIT_PER_KEY: '3', RATE_LIMIT_PER_IP: '1000', RATE_LIMIT_WINDOW_SECONDS: '60' } });
    try {
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      for (let i = 0; i < 3; i++) expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).status).toBe(200);
      const limited = await gw.api('GET', '/api/v1/instance/status', { key: a.token });
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'rate limit exceeded', code: 'rate_limited', retryAfter: 60 });
      expect(limited.headers.get('retry-after')).toBe('60');
      // Another key is not affected.
      expect((await gw.api('GET', '/api/v1/instance/status', { key: b.token })).status).toBe(200);
      clock.advance(30_000);
      const later = await gw.api('GET', '/api/v1/instance/status', { key: a.token });
      expect(later.status).toBe(429);
      expect(later.body.retryAfter).toBe(30);
      clock.advance(30_000);
      expect((await gw.api('GET', '/api/v1/instance/status', { key: a.token })).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });

  it('limits per client IP, also on routes without a key', async () => {
    const clock = new ManualClock();
    const gw = await startGateway({ clock, env: { RATE_LIMIT_PER_IP: '4', RATE_LIMIT_WINDOW_SECONDS: '10' } });
    try {
      for (let i = 0; i < 4; i++) expect((await gw.api('GET', '/api/v1/server/ok')).status).toBe(200);
      const limited = await gw.api('GET', '/api/v1/server/ok');
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'rate limit exceeded', code: 'rate_limited', retryAfter: 10 });
      clock.advance(10_000);
      expect((await gw.api('GET', '/api/v1/server/ok')).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });

  describe('behind a reverse proxy (TRUST_PROXY)', () => {
    const limits = { RATE_LIMIT_PER_IP: '2', RATE_LIMIT_WINDOW_SECONDS: '60' };
    const from = (client: string) => ({ headers: { 'x-forwarded-for': client } });

    it("a trusted proxy's X-Forwarded-For gives each client its own per-IP limit", async () => {
      const gw = await startGateway({ env: { ...limits, TRUST_PROXY: '127.0.0.1' } });
      try {
        for (let i = 0; i < 2; i++) expect((await gw.api('GET', '/api/v1/server/ok', from('203.0.113.5'))).status).toBe(200);
        expect((await gw.api('GET', '/api/v1/server/ok', from('203.0.113.5'))).status).toBe(429);
        // Another client behind the same proxy is not limited by the first one's requests.
        expect((await gw.api('GET', '/api/v1/server/ok', from('203.0.113.6'))).status).toBe(200);
        // A client that adds its own X-Forwarded-For is still known by the address the proxy saw.
        expect((await gw.api('GET', '/api/v1/server/ok', from('198.51.100.1, 203.0.113.5'))).status).toBe(429);
      } finally {
        await gw.stop();
      }
    });

    it('X-Forwarded-For from a peer that is not trusted changes nothing (no limit escaped by a header)', async () => {
      for (const trust of [undefined, '10.0.0.0/8']) {
        const gw = await startGateway({ env: { ...limits, ...(trust ? { TRUST_PROXY: trust } : {}) } });
        try {
          expect((await gw.api('GET', '/api/v1/server/ok', from('203.0.113.5'))).status).toBe(200);
          expect((await gw.api('GET', '/api/v1/server/ok', from('203.0.113.6'))).status).toBe(200);
          const third = await gw.api('GET', '/api/v1/server/ok', from('203.0.113.7'));
          expect({ trust, status: third.status }).toEqual({ trust, status: 429 });
        } finally {
          await gw.stop();
        }
      }
    });
  });

  describe('shared in Redis by two gateways', () => {
    const prefix = `wgtest:${randomBytes(4).toString('hex')}:`;
    const clock = new ManualClock();
    let one: TestGateway;
    let two: TestGateway;
    const env = {
      KV_STORE_URL: 'redis://127.0.0.1:6379',
      KV_STORE_PREFIX: prefix,
      RATE_LIMIT_PER_IP: '5',
      RATE_LIMIT_PER_KEY: '1000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
    };

    beforeAll(async () => {
      one = await startGateway({ clock, env });
      two = await startGateway({ clock, env });
    });
    afterAll(async () => {
      await one.stop();
      await two.stop();
    });

    it('counts requests to both processes against one limit', async () => {
      const answers: number[] = [];
      for (let i = 0; i < 6; i++) answers.push((await (i % 2 === 0 ? one : two).api('GET', '/api/v1/server/ok')).status);
      expect(answers).toEqual([200, 200, 200, 200, 200, 429]);
      const again = await one.api('GET', '/api/v1/server/ok');
      expect(again.status).toBe(429);
      expect(again.body.error).toBe('rate limit exceeded');
      expect(again.body.retryAfter).toBeGreaterThan(0);
      clock.advance(61_000);
      expect((await two.api('GET', '/api/v1/server/ok')).status).toBe(200);
    });
  });

  it('keeps answering with per-process limits while Redis is down, and shares them again when it is back', async () => {
    const redis = await privateRedis();
    await redis.start();
    const clock = new ManualClock();
    const gw = await startGateway({
      clock,
      env: { KV_STORE_URL: `redis://${redis.url}`, RATE_LIMIT_PER_IP: '3', RATE_LIMIT_PER_KEY: '1000', RATE_LIMIT_WINDOW_SECONDS: '60' },
    });
    try {
      await waitFor(async () => ((await gw.api('GET', '/api/v1/server/ok')).status === 200 ? true : undefined), 5000, 'first answer');
      await redis.stop();
      clock.advance(61_000);
      // Redis is gone: the limit still holds, counted in this process, and nothing answers 5xx.
      const started = Date.now();
      const answers: number[] = [];
      for (let i = 0; i < 4; i++) answers.push((await gw.api('GET', '/api/v1/server/ok')).status);
      expect(answers).toEqual([200, 200, 200, 429]);
      expect(Date.now() - started).toBeLessThan(5000); // no request waits on a dead Redis
      await redis.start();
      clock.advance(61_000);
      await waitFor(
        async () => ((await gw.api('GET', '/api/v1/server/ok')).status === 200 ? true : undefined),
        15_000,
        'answers after Redis is back',
      );
      // Back on Redis: the shared counter (in Redis) is what limits now.
      const client = new (await import('ioredis')).Redis(`redis://${redis.url}`);
      try {
        await waitFor(async () => ((await client.keys('*ratelimit:*')).length > 0 ? true : undefined), 15_000, 'counters in Redis again');
      } finally {
        client.disconnect();
      }
    } finally {
      await gw.stop();
      await redis.dispose();
    }
  });
});
