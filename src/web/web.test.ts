import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt } from '../../scripts/chromium.mjs';
import { startGateway, type TestGateway } from '../../test/support/gateway.js';
import { WEB_DIST, webRoutes } from './module.js';

const HTML = { accept: 'text/html,application/xhtml+xml' };

describe('the web interface at /', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    ensureWebBuilt(path.resolve(WEB_DIST, '../..'), () => undefined);
    gw = await startGateway();
  }, 120_000);
  afterAll(async () => gw.stop());

  it("serves index.html at / and for the interface's own paths, with a strict CSP", async () => {
    for (const route of ['/', '/instances/abc', '/profile', '/register?invitation=x']) {
      const res = await fetch(`${gw.url}${route}`, { headers: HTML });
      expect(res.status, route).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('deprecation')).toBeNull();
      expect(await res.text()).toContain('<div id="app">');
    }
  });

  it('serves hashed assets as immutable and nothing from elsewhere', async () => {
    const html = await (await fetch(gw.url, { headers: HTML })).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(html).not.toMatch(/https?:\/\//);
    const res = await fetch(`${gw.url}${script}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('javascript');
    expect(res.headers.get('cache-control')).toContain('immutable');
  });

  it('never answers for API, docs, metrics or MCP paths, and keeps JSON 404s for API clients', async () => {
    const api = await gw.api('GET', '/api/v1/nothing-here', { headers: HTML });
    expect(api.status).toBe(404);
    expect(api.body).toMatchObject({ error: 'route GET /api/v1/nothing-here not found' });
    expect((await gw.api('GET', '/mcp-not', {})).status).toBe(404);
    // /mcp belongs to the MCP server: whatever it answers, it is never the interface's page.
    const mcp = await gw.api('GET', '/mcp', { headers: HTML });
    expect(mcp.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(mcp.body)).not.toContain('<div id="app">');
    expect((await gw.api('GET', '/metrics')).status).toBe(200);
    expect((await gw.api('GET', '/instance/unknown-thing', { key: gw.adminKey })).status).toBe(404);
    expect((await gw.api('GET', '/../../package.json', { headers: HTML })).body).not.toContain('"dependencies"');
    expect((await gw.api('GET', '/api/v1/server/ok', {})).status).toBe(200);
  });
});

describe('without a build', () => {
  it('answers a page that says how to build it', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-web-'));
    const app = Fastify();
    await app.register(webRoutes(empty));
    const res = await app.inject({ method: 'GET', url: '/', headers: HTML });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build:web');
    expect((await app.inject({ method: 'GET', url: '/app.js' })).statusCode).toBe(404);
    await app.close();
    fs.rmSync(empty, { recursive: true, force: true });
  });
});
