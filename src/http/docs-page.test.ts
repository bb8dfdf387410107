/** The docs page is built on its first request: the reference module is not loaded before. */
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { registerDocsPage } from './docs-page.js';

describe('docs page', () => {
  const apps: ReturnType<typeof Fastify>[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function docsApp() {
    let loads = 0;
    const app = Fastify();
    apps.push(app);
    registerDocsPage(app, async () => {
      loads += 1;
      return (await import('@scalar/fastify-api-reference')).default;
    });
    await app.ready();
    return { app, loads: () => loads };
  }

  it('loads the reference module on the first request, once for requests at the same time', async () => {
    const { app, loads } = await docsApp();
    expect(loads()).toBe(0);
    const pages = await Promise.all([1, 2, 3].map(() => app.inject({ method: 'GET', url: '/docs/' })));
    expect(loads()).toBe(1);
    for (const page of pages) {
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.body).toContain('<title>Waygate API reference</title>');
      expect(page.body).toContain('/api/v1/openapi.json');
    }
    const script = await app.inject({ method: 'GET', url: '/docs/js/scalar.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(script.rawPayload.length).toBeGreaterThan(1_000_000);
    expect(loads()).toBe(1);
  });

  it('redirects /docs to /docs/ with no body', async () => {
    const { app } = await docsApp();
    const redirect = await app.inject({ method: 'GET', url: '/docs' });
    expect(redirect.statusCode).toBe(301);
    expect(redirect.headers.location).toBe('/docs/');
    expect(redirect.headers['content-type']).toBeUndefined();
    expect(redirect.rawPayload.length).toBe(0);
  });

  it('answers whatever Host header the client sent', async () => {
    const { app } = await docsApp();
    const page = await app.inject({ method: 'GET', url: '/docs/', headers: { host: '[not a host' } });
    expect(page.statusCode).toBe(200);
    const redirect = await app.inject({ method: 'GET', url: '/docs?x=1', headers: { host: '[not a host' } });
    expect([redirect.statusCode, redirect.headers.location]).toEqual([301, '/docs/']);
  });

  it('tries a failed load again on the next request', async () => {
    let attempts = 0;
    const app = Fastify();
    apps.push(app);
    registerDocsPage(app, async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('module missing');
      return (await import('@scalar/fastify-api-reference')).default;
    });
    expect((await app.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(500);
    expect((await app.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(200);
    expect(attempts).toBe(2);
  });
});
