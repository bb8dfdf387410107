/**
 * Error bodies: every one carries a declared `code` beside SPEC's `error` text; validation errors
 * list every problem (bounded); the registry, the OpenAPI `Error` schema, docs/errors.md and the
 * ESLint rule that keeps `new AppError(` inside src/errors.ts agree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ESLint, Linter } from 'eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, createInstance, startGateway, uniqueNumber, type TestGateway } from '../../test/support/gateway.js';
import { AppError, ERROR_CODE_LIST, ERROR_CODES, errors } from '../errors.js';
import Fastify from 'fastify';
import { StaleOwnerError } from '../storage/fence.js';
import { MAX_VALIDATION_DETAILS, registerErrorHandling } from './errors.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('error bodies on the wire', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ env: { RATE_LIMIT_PER_KEY: '30', BODY_LIMIT_BYTES: '2048' } });
  });
  afterAll(async () => gw.stop());

  /** Asserts status and code, and that the code is declared with that status. */
  function expectCode(res: { status: number; body: any }, status: number, code: string) {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body).toMatchObject({ error: expect.any(String), code });
    expect(ERROR_CODE_LIST).toContain(code);
    if (code !== 'request_rejected') expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status).toBe(status);
  }

  it('401, 403, 404, 409 carry their codes; SPEC texts are kept', async () => {
    const missing = await gw.api('GET', '/api/v1/instance/status');
    expectCode(missing, 401, 'invalid_api_key');
    expect(missing.body.error).toBe('invalid api key');

    const a = await createInstance(gw);
    expectCode(await gw.api('GET', '/api/v1/instance/all', { key: a.token }), 403, 'admin_only');
    expectCode(await gw.api('GET', '/api/v1/instance/status', { key: gw.adminKey }), 403, 'instance_only');

    expectCode(await gw.api('GET', '/api/v1/no/such/route', { key: a.token }), 404, 'route_not_found');
    expectCode(await gw.api('POST', `/api/v1/instance/rotate-token/${'f'.repeat(32)}`, { key: gw.adminKey }), 404, 'not_found');

    const taken = await gw.api('POST', '/api/v1/instance/create', { key: gw.adminKey, body: { instanceName: a.name } });
    expectCode(taken, 409, 'conflict');
    expectCode(
      await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: '5511999990000', text: 'hi' } }),
      409,
      'instance_not_connected',
    );
  });

  it('400 (validation, bad JSON), 413 and 415 from the HTTP layer carry declared codes', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    expectCode(await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: 'x' } }), 400, 'validation_failed');
    expectCode(await gw.api('POST', '/api/v1/send/text', { key: a.token, body: '{"number":' }), 400, 'invalid_json');
    expectCode(await gw.api('POST', '/api/v1/send/text', { key: a.token, body: '' }), 400, 'invalid_json');
    const big = { number: '5511999990000', text: 'x'.repeat(4096) };
    expectCode(await gw.api('POST', '/api/v1/send/text', { key: a.token, body: big }), 413, 'body_too_large');
    const plain = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: 'hello', headers: { 'content-type': 'text/plain' } });
    expectCode(plain, 415, 'unsupported_content_type');
    // A rule the schema cannot state is a bad_request from the service.
    const poll = await gw.api('POST', '/api/v1/send/poll', {
      key: a.token,
      body: { number: '5511999990000', name: 'Tea?', options: ['yes', 'no'], selectableCount: 3 },
    });
    expectCode(poll, 400, 'bad_request');
  });

  it('429 keeps retryAfter beside the code', async () => {
    const a = await createInstance(gw);
    let limited: { status: number; body: any } | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const res = await gw.api('GET', '/api/v1/instance/status', { key: a.token });
      if (res.status === 429) limited = res;
    }
    expect(limited).toBeDefined();
    expect(limited!.body).toEqual({ error: 'rate limit exceeded', code: 'rate_limited', retryAfter: expect.any(Number) });
  });

  it('a validation error lists every problem found, the first as `error`, at most MAX_VALIDATION_DETAILS', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const several = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: 12, text: 5, extra: true } });
    expectCode(several, 400, 'validation_failed');
    expect(several.body.details.length).toBeGreaterThanOrEqual(3);
    expect(several.body.error).toBe(several.body.details[0]);
    expect(several.body.details.join('\n')).toMatch(/body\.number/);
    expect(several.body.details.join('\n')).toMatch(/body\.text/);
    expect(several.body.details.join('\n')).toMatch(/extra is not an allowed field/);

    // Many wrong fields: the list is capped.
    const many: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) many[`unknown${i}`] = i;
    const capped = await gw.api('POST', '/api/v1/send/text', { key: a.token, body: many });
    expectCode(capped, 400, 'validation_failed');
    expect(capped.body.details).toHaveLength(MAX_VALIDATION_DETAILS);
  });

  it('the OpenAPI document has one Error schema whose code enum is the registry, referenced by error replies', async () => {
    const doc = (await gw.api('GET', '/api/v1/openapi.json')).body;
    const schema = doc.components.schemas.Error;
    expect(schema.properties.code.enum).toEqual(ERROR_CODE_LIST);
    expect(schema.required).toEqual(expect.arrayContaining(['error', 'code']));
    const status = doc.paths['/api/v1/instance/status'].get.responses;
    // A status's standard reply is shared (components.responses); a route that says more keeps its own.
    expect(status['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
    const unauthorized = doc.components.responses.Unauthorized;
    expect(unauthorized.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(unauthorized.description).toMatch(/`invalid_api_key`/);
    const send = doc.paths['/api/v1/send/media'].post.responses;
    const reply = (response: any) => (response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response);
    expect(reply(send['415']).content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(reply(send['415']).description).toMatch(/sniffed from the bytes/);
  });
});

describe('cluster refusals', () => {
  it('a write refused by the owner fence is a 503 instance_moving with Retry-After, never a 500', async () => {
    const app = Fastify();
    registerErrorHandling(app);
    app.get('/stale', () => {
      throw new StaleOwnerError(['inst-1']);
    });
    const res = await app.inject({ method: 'GET', url: '/stale' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'instance_moving', retryAfter: 1 });
    expect(res.headers['retry-after']).toBe('1');
    await app.close();
  });

  it('a database that cannot be reached is 503 database_unavailable, a statement it refused stays a 500', async () => {
    const app = Fastify();
    registerErrorHandling(app);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const shutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    const failures: Record<string, () => Error> = {
      refused: () => refused,
      shutdown: () => shutdown,
      terminated: () => new Error('Connection terminated unexpectedly'),
      both: () => new AggregateError([refused, refused], 'all addresses failed'),
      busy: () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }),
      statement: () => Object.assign(new Error('syntax error at or near "x"'), { code: '42601' }),
    };
    for (const [name, failure] of Object.entries(failures)) {
      app.get(`/${name}`, () => {
        throw failure();
      });
    }
    for (const name of ['refused', 'shutdown', 'terminated', 'both', 'busy']) {
      const res = await app.inject({ method: 'GET', url: `/${name}` });
      expect(res.statusCode, name).toBe(503);
      expect(res.json()).toMatchObject({ code: 'database_unavailable', retryAfter: 1 });
      expect(res.headers['retry-after']).toBe('1');
    }
    const res = await app.inject({ method: 'GET', url: '/statement' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ code: 'internal_error' });
    await app.close();
  });
});

describe('the error registry', () => {
  it('every factory makes an AppError of a declared code with the declared status', () => {
    for (const [name, factory] of Object.entries(errors)) {
      const made = (factory as (...args: unknown[]) => unknown)('x', 'y');
      expect(made, name).toBeInstanceOf(AppError);
      const error = made as AppError;
      expect(ERROR_CODE_LIST, name).toContain(error.code);
      // request_rejected keeps the status the HTTP layer chose.
      if (error.code !== 'request_rejected') expect(error.status, name).toBe(ERROR_CODES[error.code as keyof typeof ERROR_CODES].status);
    }
  });

  it('docs/errors.md lists every code with its status', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8');
    for (const code of ERROR_CODE_LIST) {
      expect(doc, code).toMatch(new RegExp(`^\\| \`${code}\` \\| ${ERROR_CODES[code].status} \\|`, 'm'));
    }
    const listed = [...doc.matchAll(/^\| `([a-z_]+)` \| \d{3} \|/gm)].map((m) => m[1]);
    expect(listed).toEqual(ERROR_CODE_LIST);
  });

  it('ESLint refuses `new AppError(` outside src/errors.ts', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const elsewhere = (await eslint.calculateConfigForFile(path.join(ROOT, 'src/sending/service.ts'))) as Linter.Config;
    const registry = (await eslint.calculateConfigForFile(path.join(ROOT, 'src/errors.ts'))) as Linter.Config;
    const rule = elsewhere.rules?.['no-restricted-syntax'];
    expect(rule).toBeDefined();
    expect([registry.rules?.['no-restricted-syntax']].flat()[0]).toBe(0);

    const linter = new Linter({ configType: 'flat' });
    const code = "class AppError {}\nexport const e = new AppError('x', 400, 'y');\nexport const ok = AppError;\n";
    const messages = linter.verify(code, [{ rules: { 'no-restricted-syntax': rule! } }]);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ ruleId: 'no-restricted-syntax', line: 2 });
  });
});
