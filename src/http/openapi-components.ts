/**
 * Shares what the generated OpenAPI document would otherwise repeat on every operation:
 * - each error status's standard reply (its text and codes, the `Error` body) becomes one
 *   `components.responses` entry (`BadRequest`, `Unauthorized`, ...); a route that says more about a
 *   status keeps its own reply;
 * - a schema named in code (a `title` that is a component name, e.g. `ChatSummary`) becomes one
 *   `components.schemas` entry, referenced by `$ref` wherever it appears (bodies, replies, webhooks).
 * Two different schemas under one name are a programming error: building the document fails.
 */

type Json = Record<string, any>;

const STATUS_NAMES: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '409': 'Conflict',
  '410': 'Gone',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'UnprocessableContent',
  '429': 'TooManyRequests',
  '500': 'InternalServerError',
  '501': 'NotImplemented',
  '502': 'BadGateway',
  '503': 'ServiceUnavailable',
  '504': 'GatewayTimeout',
};

/** A component name: PascalCase letters and digits. */
const COMPONENT_NAME = /^[A-Z][A-Za-z0-9]*$/;
/** Keys whose values are data, not schemas: never walked for names. */
const DATA_KEYS = new Set(['example', 'examples', 'default', 'enum', 'const']);
const OPERATION_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

export function shareComponents<T extends Json>(document: T): T {
  shareErrorResponses(document);
  shareNamedSchemas(document);
  return document;
}

function operationsOf(document: Json): Json[] {
  const operations: Json[] = [];
  for (const item of Object.values<Json>(document.paths ?? {})) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      if (OPERATION_METHODS.has(method) && typeof operation === 'object' && operation !== null) operations.push(operation);
    }
  }
  return operations;
}

/** The most used reply of each error status becomes `components.responses.<StatusName>`. */
function shareErrorResponses(document: Json): void {
  const variants = new Map<string, Map<string, number>>();
  const operations = operationsOf(document);
  for (const operation of operations) {
    for (const [status, reply] of Object.entries<Json>(operation.responses ?? {})) {
      if (!STATUS_NAMES[status] || reply.$ref) continue;
      const text = JSON.stringify(reply);
      const counts = variants.get(status) ?? new Map<string, number>();
      counts.set(text, (counts.get(text) ?? 0) + 1);
      variants.set(status, counts);
    }
  }
  const shared = new Map<string, string>();
  const responses: Json = (document.components ??= {}).responses ?? {};
  for (const [status, counts] of [...variants].sort(([a], [b]) => Number(a) - Number(b))) {
    const [text, uses] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
    if (uses < 2) continue;
    const name = STATUS_NAMES[status]!;
    responses[name] = JSON.parse(text);
    shared.set(`${status} ${text}`, name);
  }
  if (shared.size === 0) return;
  document.components.responses = responses;
  for (const operation of operations) {
    for (const [status, reply] of Object.entries<Json>(operation.responses ?? {})) {
      const name = shared.get(`${status} ${JSON.stringify(reply)}`);
      if (name) operation.responses[status] = { $ref: `#/components/responses/${name}` };
    }
  }
}

/** Every schema with a component-name `title` moves to `components.schemas` and is referenced. */
function shareNamedSchemas(document: Json): void {
  const schemas: Json = ((document.components ??= {}).schemas ??= {});
  const texts = new Map<string, string>(Object.entries<Json>(schemas).map(([name, schema]) => [name, JSON.stringify(schema)]));
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (typeof node !== 'object' || node === null) return node;
    const object = node as Json;
    for (const [key, value] of Object.entries(object)) {
      if (!DATA_KEYS.has(key)) object[key] = visit(value);
    }
    const name = object.title;
    if (typeof name !== 'string' || !COMPONENT_NAME.test(name) || typeof object.$ref === 'string') return object;
    const text = JSON.stringify(object);
    const known = texts.get(name);
    if (known === undefined) {
      texts.set(name, text);
      schemas[name] = object;
    } else if (known !== text) {
      throw new Error(`OpenAPI: two different schemas are named ${name}; give one of them another title`);
    }
    return { $ref: `#/components/schemas/${name}` };
  };
  for (const item of Object.values<Json>(document.paths ?? {})) visit(item);
  for (const item of Object.values<Json>(document.webhooks ?? {})) visit(item);
  // Named schemas inside named schemas are shared too (their own children were visited above).
  for (const [name, schema] of Object.entries<Json>(schemas)) {
    for (const [key, value] of Object.entries(schema)) if (!DATA_KEYS.has(key)) schema[key] = visit(value);
    texts.set(name, JSON.stringify(schema));
  }
}
