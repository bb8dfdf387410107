/**
 * Fuzz: requests generated from the gateway's own OpenAPI document, for every operation, with
 * fast-check. Bodies, query strings and path parameters follow the documented schemas most of the
 * time (so requests get past validation and reach the services) and break them the rest of the time
 * (wrong types, missing and extra fields, odd strings); keys are the admin key, an instance token,
 * another instance's token, garbage or none. The property: no answer is 5xx, and the gateway keeps
 * serving, and its heap stays flat: the live heap after a full GC, measured once the first quarter of
 * the requests has warmed caches and pools up and again at the end, may not grow by more than
 * HEAP_GROWTH_LIMIT_MB. FUZZ_RUNS sets the number of requests (default 2,000; `npm run fuzz` runs 50,000).
 */
import fc from 'fast-check';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, startGateway, uniqueNumber, type TestGateway, type TestInstance } from './support/gateway.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
/** Growth of the live heap allowed between the end of the warm-up and the end of the run. */
const HEAP_GROWTH_LIMIT_MB = 32;

// A full GC on demand without starting node with --expose-gc (the test runs in a vitest worker).
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** The live heap (MB) after full collections: what stays, not what waits for the collector. */
function liveHeapMb(): number {
  for (let i = 0; i < 3; i += 1) collectGarbage();
  return process.memoryUsage().heapUsed / 1_048_576;
}

type Schema = Record<string, any>;

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  query: Schema[];
  body: Schema | undefined;
}

const oddStrings = fc.constantFrom(
  '',
  ' ',
  '0',
  '-1',
  '1e309',
  'null',
  'true',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '\r\nX-Injected: 1',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '😀'.repeat(50),
  'a'.repeat(5000),
  '__proto__',
  'constructor',
  '5511999990000',
  '5511999990000@s.whatsapp.net',
  '120363000000000000@g.us',
  'status@broadcast',
  'https://example.com/x.png',
  'http://127.0.0.1:1/x',
  'data:image/png;base64,iVBORw0KGgo=',
  'iVBORw0KGgo=',
  '2026-01-01T00:00:00Z',
  '00000000-0000-0000-0000-000000000000',
);

const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true }),
    oddStrings,
    fc.string({ maxLength: 20 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Values of a JSON schema: mostly valid, sometimes not (`wild`). */
function fromSchema(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return anyJson;
  const valid = validFrom(schema, depth);
  return fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: anyJson });
}

function validFrom(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...(schema.enum as unknown[]));
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (variants && variants.length > 0) return fc.oneof(...variants.map((v) => fromSchema(v, depth + 1)));
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return fromSchema(schema.allOf[0] as Schema, depth + 1);
  const type: string = Array.isArray(schema.type) ? String(schema.type[0]) : String(schema.type ?? 'object');
  switch (type) {
    case 'string': {
      const max = Math.min(Number(schema.maxLength ?? 64), 256);
      const min = Math.min(Number(schema.minLength ?? 0), max);
      const examples = [schema.default, schema.example, ...(Array.isArray(schema.examples) ? schema.examples : [])].filter(
        (e): e is string => typeof e === 'string',
      );
      const plain = fc.string({ minLength: min, maxLength: max });
      const digits = fc.stringMatching(/^[0-9]{10,15}$/);
      return examples.length > 0 ? fc.oneof(fc.constantFrom(...examples), plain, digits, oddStrings) : fc.oneof(plain, digits, oddStrings);
    }
    case 'integer':
      return fc.integer({ min: Number(schema.minimum ?? -1000), max: Number(schema.maximum ?? 1_000_000) });
    case 'number':
      return fc.double({ min: Number(schema.minimum ?? -1e6), max: Number(schema.maximum ?? 1e6), noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(fromSchema(schema.items as Schema | undefined, depth + 1), {
        minLength: Math.min(Number(schema.minItems ?? 0), 5),
        maxLength: Math.min(Number(schema.maxItems ?? 5), 5),
      });
    case 'object':
    default: {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      const shape: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(properties)) shape[name] = fromSchema(property, depth + 1);
      if (Object.keys(shape).length === 0)
        return type === 'object' ? fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }) : anyJson;
      return fc.record(shape, { requiredKeys: [...required].filter((k) => k in shape) });
    }
  }
}

function operationsOf(document: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])] as {
        in: string;
        name: string;
        schema?: Schema;
        required?: boolean;
      }[];
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, ...(p.schema ?? {}) })),
        body: op.requestBody?.content?.['application/json']?.schema as Schema | undefined,
      });
    }
  }
  return operations;
}

describe('fuzzing every operation of the OpenAPI document', () => {
  let gw: TestGateway;
  let a: TestInstance;
  let b: TestInstance;
  let operations: Operation[];

  beforeAll(async () => {
    gw = await startGateway({
      env: {
        RATE_LIMIT_PER_IP: '10000000',
        RATE_LIMIT_PER_KEY: '10000000',
        BATCH_MIN_INTERVAL_MS: '0',
        BATCH_INTERVAL_MS: '0',
        MEDIA_FETCH_TIMEOUT_MS: '500',
        SANDBOX_RECONNECT_DELAY_MS: '0',
      },
    });
    a = await connectedInstance(gw, uniqueNumber());
    b = await connectedInstance(gw, uniqueNumber());
    const document = (await gw.api('GET', '/api/v1/openapi.json')).body;
    operations = operationsOf(document).filter((op) => op.path !== '/ws' && !op.path.endsWith('/ws'));
  });
  afterAll(async () => gw?.stop());

  it(`answers ${RUNS} generated requests without a 5xx and keeps serving`, { timeout: Math.max(120_000, RUNS * 60) }, async () => {
    expect(operations.length).toBeGreaterThan(100);
    const knownIds = () => [a.id, b.id, 'nope', '00000000-0000-0000-0000-000000000000'];
    const keys = fc.oneof(
      { weight: 6, arbitrary: fc.constant(() => a.token) },
      { weight: 3, arbitrary: fc.constant(() => gw.adminKey) },
      { weight: 1, arbitrary: fc.constant(() => b.token) },
      {
        weight: 1,
        arbitrary: fc.constantFrom<() => string | undefined>(
          () => undefined,
          () => 'wgt_short',
          () => `wgt_${'A'.repeat(43)}`,
        ),
      },
    );
    const request = fc.integer({ min: 0, max: operations.length - 1 }).chain((index) => {
      const op = operations[index]!;
      const params = fc.tuple(
        ...op.pathParams.map(() => fc.oneof(fc.constantFrom(...knownIds()), fc.string({ minLength: 1, maxLength: 30 }), oddStrings)),
      );
      const query = fc.tuple(...op.query.map((q) => fc.option(fromSchema(q), { nil: undefined })));
      const body = op.body
        ? fc.oneof({ weight: 9, arbitrary: fromSchema(op.body) }, { weight: 1, arbitrary: anyJson })
        : fc.constant(undefined);
      return fc.record({ op: fc.constant(op), params, query, body, key: keys });
    });
    const failures: string[] = [];
    let sent = 0;
    const warmUp = Math.floor(RUNS / 4);
    let heapAfterWarmUp = 0;
    let rssAfterWarmUp = 0;
    await fc.assert(
      fc.asyncProperty(request, async ({ op, params, query, body, key }) => {
        let path = op.path;
        op.pathParams.forEach((name, i) => {
          path = path.replace(`{${name}}`, encodeURIComponent(String(params[i] ?? 'x') || 'x'));
        });
        const search = new URLSearchParams();
        op.query.forEach((q, i) => {
          const value = query[i];
          if (value === undefined) return;
          search.set(String(q.name), typeof value === 'string' ? value : JSON.stringify(value));
        });
        const route = `${path}${search.size > 0 ? `?${search.toString()}` : ''}`;
        const apiKey = key();
        const res = await gw.api(op.method, route, {
          ...(apiKey !== undefined ? { key: apiKey } : {}),
          ...(op.method !== 'GET' && op.method !== 'DELETE' && body !== undefined ? { body } : {}),
        });
        sent += 1;
        if (sent === warmUp) {
          heapAfterWarmUp = liveHeapMb();
          rssAfterWarmUp = process.memoryUsage().rss / 1_048_576;
        }
        if (res.status >= 500) {
          failures.push(`${op.method} ${route} ${JSON.stringify(body)?.slice(0, 300)} -> ${res.status} ${JSON.stringify(res.body)}`);
          return false;
        }
        return true;
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    expect((await gw.api('GET', '/api/v1/server/ok')).status).toBe(200);
    const heapAtEnd = liveHeapMb();
    const rssAtEnd = process.memoryUsage().rss / 1_048_576;
    const growth = heapAtEnd - heapAfterWarmUp;
    console.log(
      `fuzz memory: live heap ${heapAfterWarmUp.toFixed(1)} MB after ${warmUp} requests, ${heapAtEnd.toFixed(1)} MB after ${sent} ` +
        `(${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB, limit ${HEAP_GROWTH_LIMIT_MB}); RSS ${rssAfterWarmUp.toFixed(0)} -> ${rssAtEnd.toFixed(0)} MB`,
    );
    expect(heapAfterWarmUp).toBeGreaterThan(0);
    expect(growth).toBeLessThan(HEAP_GROWTH_LIMIT_MB);
  });
});
