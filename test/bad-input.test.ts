/**
 * The bad-input sweep: hundreds of malformed requests against every documented route, with the right
 * key, must all get a 4xx JSON error — never a 500, never a crash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, startGateway, uniqueNumber, type TestGateway, type TestInstance } from './support/gateway.js';

/** Routes swept at the same time. */
const SWEEP_CONCURRENCY = 6;

interface Route {
  method: string;
  path: string;
  schema: any;
  /** Names of the query parameters the document declares. */
  query: string[];
}

const NASTY_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1e308,
  -1e308,
  3.14,
  '',
  ' ',
  'a'.repeat(70_000),
  '\u0000',
  '😀',
  '../../etc/passwd',
  '<script>',
  "' OR 1=1 --",
  [],
  [1, 2],
  {},
  { $gt: '' },
  { __proto__: { admin: true } },
  [[[[[]]]]],
  'NaN',
  '-0',
];

const RAW_BODIES = [
  '',
  '{',
  '}',
  '[',
  'null',
  'true',
  '1',
  '"x"',
  '[]',
  '{"a":',
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '\u0000\u0001',
  '{"a":1,"a":2',
  `{"deep":${'['.repeat(5000)}${']'.repeat(5000)}}`,
  '\xff\xfe',
];

function wrongTypeFor(schema: any): unknown[] {
  const type = schema?.type;
  if (type === 'string') return [1, true, null, {}, [], 'x'.repeat((schema.maxLength ?? 100_000) + 1)];
  if (type === 'integer' || type === 'number') return ['1', true, null, {}, 1.5, -1e12, 1e15];
  if (type === 'boolean') return ['true', 1, null];
  if (type === 'array') return ['x', 1, {}, null, Array.from({ length: (schema.maxItems ?? 2000) + 1 }, () => 'x')];
  if (type === 'object') return ['x', 1, [], null];
  return [Symbol.for('skip')];
}

function malformedBodies(schema: any): string[] {
  const bodies: string[] = [...RAW_BODIES];
  for (const value of NASTY_VALUES) bodies.push(JSON.stringify(value));
  if (schema?.type === 'object' && schema.properties) {
    const required: string[] = schema.required ?? [];
    const props = Object.entries(schema.properties as Record<string, any>);
    // Every field given a wrong type, the others filled with nasty values.
    for (const [name, prop] of props) {
      for (const bad of wrongTypeFor(prop)) {
        if (bad === Symbol.for('skip')) continue;
        const body: Record<string, unknown> = {};
        for (const [other] of props) body[other] = other === name ? bad : 'x';
        bodies.push(JSON.stringify(body));
      }
    }
    for (const missing of required) {
      const body: Record<string, unknown> = {};
      for (const [name] of props) if (name !== missing) body[name] = 123;
      bodies.push(JSON.stringify(body));
    }
    bodies.push(JSON.stringify({ unknownField: 1 }));
  }
  return bodies;
}

describe('bad-input sweep over every route', () => {
  let gw: TestGateway;
  let instance: TestInstance;
  let routes: Route[];

  beforeAll(async () => {
    gw = await startGateway({ env: { RATE_LIMIT_PER_IP: '10000000', RATE_LIMIT_PER_KEY: '10000000' } });
    instance = await connectedInstance(gw, uniqueNumber());
    const doc = (await gw.api('GET', '/api/v1/openapi.json')).body;
    routes = [];
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(methods)) {
        // The WebSocket stream is swept too: a plain GET reaches the checks that run before an upgrade.
        routes.push({
          method: method.toUpperCase(),
          path,
          schema: op.requestBody?.content?.['application/json']?.schema,
          query: ((op.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name),
        });
      }
    }
  });
  afterAll(async () => gw.stop());

  async function keyFor(route: Route, url: string): Promise<string | undefined> {
    if (route.path.endsWith('/server/ok')) return undefined;
    const probe = await fetch(url, { method: route.method, headers: { apikey: gw.adminKey } });
    const text = await probe.text();
    return probe.status === 403 && text.includes('instance token') ? instance.token : gw.adminKey;
  }

  it('finds the documented routes, the WebSocket stream among them', () => {
    expect(routes.length).toBeGreaterThan(10);
    expect(routes.find((route) => route.path === '/api/v1/ws')).toMatchObject({ method: 'GET', query: ['token', 'instanceId'] });
  });

  // Thousands of requests, growing with every route.
  it('never answers 5xx to malformed bodies, params or queries', { timeout: 120_000 }, async () => {
    const failures: string[] = [];
    let requests = 0;
    // Every route is swept, a few at a time; a path without parameters is swept once (not once per
    // parameter value), which keeps the sweep well under its budget on a busy machine.
    const queue = [...routes];
    const sweepNext = async (): Promise<void> => {
      for (let route = queue.shift(); route; route = queue.shift()) await sweep(route);
    };
    const sweep = async (route: Route) => {
      const concretePaths = [
        ...new Set(
          ['x', '%00', '..%2F..', 'a'.repeat(300), '00000000-0000-0000-0000-000000000000'].map((p) => route.path.replace(/\{[^}]+\}/g, p)),
        ),
      ];
      for (const path of concretePaths) {
        const url = `${gw.url}${path}`;
        const key = await keyFor(route, url);
        const headers: Record<string, string> = key ? { apikey: key } : {};
        const attempts: { body?: string; query?: string; contentType?: string }[] = [];
        if (route.method !== 'GET' && route.method !== 'DELETE') {
          for (const body of malformedBodies(route.schema)) attempts.push({ body, contentType: 'application/json' });
          attempts.push({ body: 'a=1', contentType: 'application/x-www-form-urlencoded' });
          attempts.push({ body: '{}', contentType: 'application/xml' });
        } else {
          for (const query of ['limit=-1', 'limit=abc', 'offset=-5', 'limit=100000', 'offset=1e99', 'x=%ZZ', 'limit[]=1&limit[]=2']) {
            attempts.push({ query });
          }
          // The declared query parameters, all present with values they cannot take.
          for (const value of ['x', '', '%00', 'a'.repeat(3000)]) {
            if (route.query.length > 0) attempts.push({ query: route.query.map((name) => `${name}=${value}`).join('&') });
          }
        }
        for (const attempt of attempts) {
          requests += 1;
          const response = await fetch(attempt.query ? `${url}?${attempt.query}` : url, {
            method: route.method,
            headers: { ...headers, ...(attempt.contentType ? { 'content-type': attempt.contentType } : {}) },
            ...(attempt.body !== undefined ? { body: attempt.body } : {}),
          });
          const text = await response.text();
          const ok = response.status >= 400 && response.status < 500;
          const json = (() => {
            try {
              return JSON.parse(text) as { error?: unknown };
            } catch {
              return undefined;
            }
          })();
          if (!ok || typeof json?.error !== 'string') {
            // Routes that take no body ignore one, and a GET may answer a harmless query: 2xx is fine there.
            const takesNoInput = route.schema === undefined || route.method === 'GET' || route.method === 'DELETE';
            if (response.status < 300 && takesNoInput) continue;
            failures.push(
              `${route.method} ${path}?${attempt.query ?? ''} body=${(attempt.body ?? '').slice(0, 80)} -> ${response.status} ${text.slice(0, 120)}`,
            );
          }
        }
      }
    };
    await Promise.all(Array.from({ length: SWEEP_CONCURRENCY }, sweepNext));
    expect(requests).toBeGreaterThan(300);
    expect(failures).toEqual([]);
    // The gateway is still alive.
    expect((await gw.api('GET', '/api/v1/server/ok')).status).toBe(200);
  });
});
