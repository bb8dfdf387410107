/**
 * Generates the typed client's operation table and types (packages/client/src/generated/) from the
 * gateway's OpenAPI document: one method per operation, named after its `operationId` (or, for an
 * operation without one, after its method and path), with request and response types from its
 * schemas; the event types from the document's `webhooks` section, or from the schemas the code
 * uses (src/network/events.ts) when the document has none.
 *
 *   npx tsx scripts/client-gen.ts          writes the files
 * packages/client/test/generated.test.ts regenerates in memory and fails when the files differ.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as prettier from 'prettier';
import { EVENT_DATA } from '../src/network/events.js';
import { EVENT_TYPES } from '../src/network/port.js';
import { operationIdOf } from '../src/http/openapi.js';
import { buildOpenApiDocument } from './openapi-document.js';

type Schema = Record<string, any>;
type Document = Record<string, any>;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const GENERATED_DIR = path.join(ROOT, 'packages/client/src/generated');
const PREFIX = '/api/v1';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Names for operations without an operationId: the gateway's own rule (src/http/openapi.ts). */
export function fallbackOperationName(method: string, route: string): string {
  return operationIdOf(method, route);
}

function pascal(word: string): string {
  return word
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

function comment(text: string | undefined, indent = ''): string {
  if (!text) return '';
  const lines = text.replace(/\*\//g, '*\\/').trim().split('\n');
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => `${indent} * ${line}`.trimEnd()).join('\n')}\n${indent} */\n`;
}

/** The object a local `$ref` (`#/components/...`) points to; other objects as they are. */
function deref(doc: Document, value: Schema | undefined): Schema | undefined {
  let current = value;
  for (let hops = 0; current && typeof current.$ref === 'string' && hops < 10; hops++) {
    const pointer = current.$ref;
    if (!pointer.startsWith('#/')) throw new Error(`only local $refs are supported, not ${pointer}`);
    current = pointer
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<any>((node, part) => node?.[part], doc);
    if (current === undefined) throw new Error(`unresolvable $ref ${pointer}`);
  }
  return current;
}

/** JSON Schema (2020-12, as OpenAPI 3.1 holds it) to a TypeScript type. */
class TypeWriter {
  /** Component schemas referenced so far, rendered once as named types. */
  readonly refs = new Set<string>();

  constructor(private readonly doc: Document) {}

  /** `files`: paths (`media`, `cards[].media`) where an uploaded file may stand in for the value. */
  type(schema: Schema | boolean | undefined, files: string[] = [], at = ''): string {
    const rendered = this.plain(schema, files, at);
    return files.includes(at) ? `${wrap(rendered)} | FileUpload` : rendered;
  }

  private plain(schema: Schema | boolean | undefined, files: string[], at: string): string {
    if (schema === undefined || schema === true) return 'unknown';
    if (schema === false) return 'never';
    if (typeof schema.$ref === 'string') {
      const name = /^#\/components\/schemas\/([^/]+)$/.exec(schema.$ref)?.[1];
      // A path inside a component renders inline; a whole component is a named type.
      if (!name) return this.type(deref(this.doc, schema), files, at);
      if (!this.doc.components?.schemas?.[name]) throw new Error(`unresolvable $ref ${schema.$ref}`);
      this.refs.add(name);
      return `Schemas.${componentName(name)}`;
    }
    if ('const' in schema) return JSON.stringify(schema.const);
    if (Array.isArray(schema.enum)) return schema.enum.map((value: unknown) => JSON.stringify(value)).join(' | ');
    for (const combinator of ['anyOf', 'oneOf'] as const) {
      if (Array.isArray(schema[combinator])) {
        return unique(schema[combinator].map((member: Schema) => wrap(this.type(member, files, at)))).join(' | ');
      }
    }
    if (Array.isArray(schema.allOf)) return schema.allOf.map((member: Schema) => wrap(this.type(member, files, at))).join(' & ');
    if (Array.isArray(schema.type)) {
      return unique(schema.type.map((type: string) => wrap(this.plain({ ...schema, type }, files, at)))).join(' | ');
    }
    switch (schema.type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        if (Array.isArray(schema.prefixItems)) return `[${schema.prefixItems.map((item: Schema) => this.type(item)).join(', ')}]`;
        return `${wrap(this.type(schema.items, files, `${at}[]`))}[]`;
      case 'object':
      case undefined:
        if (schema.type === undefined && !schema.properties && !schema.additionalProperties && !schema.patternProperties) return 'unknown';
        return this.object(schema, files, at);
      default:
        return 'unknown';
    }
  }

  private object(schema: Schema, files: string[], at: string): string {
    const required = new Set<string>(schema.required ?? []);
    const lines: string[] = [];
    for (const [name, property] of Object.entries<Schema>(schema.properties ?? {})) {
      const path = at ? `${at}.${name}` : name;
      lines.push(`${comment(property.description)}${key(name)}${required.has(name) ? '' : '?'}: ${this.type(property, files, path)};`);
    }
    const extra = [schema.additionalProperties, ...Object.values(schema.patternProperties ?? {})].filter(
      (value) => value !== undefined && value !== false,
    );
    if (extra.length > 0) {
      // Named fields must fit the index signature: open objects take any value beside them.
      const value = lines.length > 0 ? 'unknown' : unique(extra.map((item) => this.type(item))).join(' | ');
      lines.push(`[field: string]: ${value};`);
    }
    return lines.length === 0 ? 'Record<string, never>' : `{\n${lines.join('\n')}\n}`;
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function wrap(type: string): string {
  return /^[\w.$"'[\]]+$/.test(type) || type.startsWith('{') ? type : `(${type})`;
}

function componentName(name: string): string {
  return pascal(name) || 'Schema';
}

interface Operation {
  name: string;
  method: string;
  route: string;
  summary: string | undefined;
  description: string | undefined;
  pathParams: Schema[];
  query: Schema[];
  body: { schema: Schema; files: string[] } | undefined;
  response: { kind: 'json'; schema: Schema } | { kind: 'binary' } | { kind: 'none' };
}

function operations(doc: Document): Operation[] {
  const list: Operation[] = [];
  for (const [fullPath, item] of Object.entries<Schema>(doc.paths ?? {})) {
    if (!fullPath.startsWith(`${PREFIX}/`)) continue;
    const route = fullPath.slice(PREFIX.length);
    for (const method of METHODS) {
      const op = item[method] as Schema | undefined;
      // WebSocket upgrades are not calls: the client's events() opens them.
      if (!op || route === '/ws' || route.endsWith('/ws') || op.responses?.['101']) continue;
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((parameter: Schema) => deref(doc, parameter)!);
      const content = deref(doc, op.requestBody)?.content ?? {};
      const json = content['application/json']?.schema as Schema | undefined;
      const form = content['multipart/form-data']?.schema as Schema | undefined;
      const files = Object.entries<Schema>(form?.properties ?? {})
        .filter(([, property]) => deref(doc, property)?.format === 'binary')
        .map(([name]) => name.replace(/\[\d+\]/g, '[]'));
      const success = Object.keys(op.responses ?? {})
        .filter((status) => /^2\d\d$/.test(status))
        .sort()[0];
      const answer = success ? deref(doc, op.responses[success])?.content : undefined;
      const response: Operation['response'] = answer?.['application/json']
        ? { kind: 'json', schema: answer['application/json'].schema ?? {} }
        : answer
          ? { kind: 'binary' }
          : { kind: 'none' };
      list.push({
        name: typeof op.operationId === 'string' && IDENTIFIER.test(op.operationId) ? op.operationId : fallbackOperationName(method, route),
        method: method.toUpperCase(),
        route,
        summary: op.summary,
        description: op.description,
        pathParams: parameters.filter((parameter) => parameter.in === 'path'),
        query: parameters.filter((parameter) => parameter.in === 'query'),
        body: json ? { schema: json, files } : undefined,
        response,
      });
    }
  }
  const seen = new Set<string>();
  for (const op of list) {
    if (seen.has(op.name)) throw new Error(`two operations are named ${op.name}`);
    seen.add(op.name);
  }
  return list.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The `data` schema of each event type: from the document's webhooks (an entry named after the type,
 * or whose envelope's `event` is that type) when it has them, else from the code's own schemas.
 */
function eventDataSchemas(doc: Document): Record<string, Schema> {
  const fromDocument = new Map<string, Schema>();
  for (const [name, hook] of Object.entries<Schema>(doc.webhooks ?? {})) {
    const body = deref(doc, hook?.post?.requestBody);
    const schema = deref(doc, body?.content?.['application/json']?.schema);
    // The envelope's fields, also when it is composed (`allOf`).
    const properties: Record<string, Schema> = {};
    for (const part of [schema, ...((schema?.allOf as Schema[] | undefined) ?? []).map((member) => deref(doc, member))]) {
      Object.assign(properties, part?.properties ?? {});
    }
    const envelope = { properties };
    const event = deref(doc, envelope.properties.event);
    const type = (EVENT_TYPES as readonly string[]).includes(name.toUpperCase())
      ? name.toUpperCase()
      : typeof event?.const === 'string'
        ? event.const
        : Array.isArray(event?.enum) && event.enum.length === 1
          ? String(event.enum[0])
          : undefined;
    const data = envelope.properties.data;
    if (type && data) fromDocument.set(type, data);
  }
  const result: Record<string, Schema> = {};
  for (const type of EVENT_TYPES) {
    result[type] = fromDocument.get(type) ?? (JSON.parse(JSON.stringify(EVENT_DATA[type])) as Schema);
  }
  return result;
}

function inputType(op: Operation, writer: TypeWriter): { type: string; optional: boolean } | undefined {
  const fields: string[] = [];
  let optional = true;
  for (const parameter of [...op.pathParams, ...op.query]) {
    const schema = (parameter.schema ?? {}) as Schema;
    const required = parameter.in === 'path' || (parameter.required === true && schema.default === undefined);
    if (required) optional = false;
    fields.push(`${comment(parameter.description)}${key(parameter.name)}${required ? '' : '?'}: ${writer.type(schema)};`);
  }
  const body = op.body ? writer.type(op.body.schema, op.body.files) : undefined;
  if (fields.length === 0) return body === undefined ? undefined : { type: body, optional: false };
  if (body !== undefined) {
    fields.push(`body: ${body};`);
    optional = false;
  }
  return { type: `{\n${fields.join('\n')}\n}`, optional };
}

export interface GeneratedFiles {
  [file: string]: string;
}

/** The generated files (unformatted) for `doc`. */
export function generateClient(doc: Document): GeneratedFiles {
  const writer = new TypeWriter(doc);
  const ops = operations(doc);
  const types: string[] = [];
  const methods: string[] = [];
  const table: string[] = [];
  const operationMap: string[] = [];
  const routeMap: string[] = [];

  for (const op of ops) {
    const Name = pascal(op.name);
    const input = inputType(op, writer);
    const response = op.response.kind === 'json' ? writer.type(op.response.schema) : op.response.kind === 'binary' ? 'ArrayBuffer' : 'void';
    if (input) types.push(`export type ${Name}Input = ${input.type};`);
    types.push(`export type ${Name}Response = ${response};`);
    const routeKey = `${op.method} ${op.route}`;
    const doc = [op.summary, op.description, `\`${routeKey}\``].filter(Boolean).join('\n\n');
    const argument = input ? `input${input.optional ? '?' : ''}: ${Name}Input, ` : '';
    methods.push(`${comment(doc)}${op.name}(${argument}options?: RequestOptions): Promise<${Name}Response>;`);
    operationMap.push(
      `${op.name}: { route: ${JSON.stringify(routeKey)}; input: ${input ? `${Name}Input` : 'void'}; response: ${Name}Response };`,
    );
    routeMap.push(`${JSON.stringify(routeKey)}: Operations[${JSON.stringify(op.name)}];`);
    table.push(
      `${op.name}: ${JSON.stringify({
        method: op.method,
        path: op.route,
        pathParams: op.pathParams.map((parameter) => parameter.name),
        query: op.query.map((parameter) => parameter.name),
        body: op.body !== undefined,
        files: op.body?.files ?? [],
        response: op.response.kind,
      })},`,
    );
  }

  const events = eventDataSchemas(doc);
  const eventTypes = EVENT_TYPES.map((type) => `${type}: ${writer.type(events[type])};`);

  // Components last: rendering operations and events found the ones they use.
  const components: string[] = [];
  const rendered = new Set<string>();
  for (let pending = [...writer.refs]; pending.length > 0; pending = [...writer.refs].filter((name) => !rendered.has(name))) {
    for (const name of pending.sort()) {
      rendered.add(name);
      const schema = doc.components.schemas[name] as Schema;
      components.push(`${comment(schema.description)}export type ${componentName(name)} = ${writer.type(schema)};`);
    }
  }

  const banner = `// Generated by scripts/client-gen.ts from the gateway's OpenAPI document (${doc.info?.title ?? 'Waygate'} ${doc.info?.version ?? ''}). Do not edit: run \`npm run client:generate\`.\n`;
  const api = `${banner}
/** A file for a media field of a multipart upload: its bytes, and optionally its name and type (a hint; the gateway sniffs the bytes). */
export interface FileUpload {
  file: Blob | Uint8Array | ArrayBuffer;
  filename?: string;
  mimetype?: string;
}

/** Per-call options of every method. */
export interface RequestOptions {
  /** Another key for this call (an instance token where the client holds the admin key, or the reverse). */
  apiKey?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** The document's shared schemas (components.schemas). */
export declare namespace Schemas {
${components.join('\n\n')}
}

${types.join('\n\n')}

/** Every operation by name: its route, input and response. */
export interface Operations {
${operationMap.join('\n')}
}

/** Every operation by route (\`METHOD /path\`, the path without /api/v1). */
export interface Routes {
${routeMap.join('\n')}
}

export type OperationName = keyof Operations;
export type Route = keyof Routes;

/** One method per operation of the gateway's API. */
export interface ApiMethods {
${methods.join('\n\n')}
}

/** The 13 event types, in the order SPEC lists them. */
export type EventType = ${EVENT_TYPES.map((type) => JSON.stringify(type)).join(' | ')};

/** The \`data\` of each event type. */
export interface EventDataMap {
${eventTypes.join('\n')}
}

/** The envelope every channel delivers (webhook body, WebSocket frame, broker message). */
export interface EventEnvelope<T extends EventType = EventType> {
  event: T;
  instanceId: string;
  instanceName: string;
  data: EventDataMap[T];
  /** UUID, the same on every retry and channel: deduplicate with it. */
  eventId: string;
  /** ISO 8601 UTC time the event was recorded. */
  timestamp: string;
  /** The instance's event number (1, 2, 3, ... in recording order, the same on every channel): order by it, gaps are events this channel did not get. */
  seq: number;
}

/** Any event, discriminated by \`event\`: \`switch (e.event)\` narrows \`data\`. */
export type WaygateEvent = { [T in EventType]: EventEnvelope<T> }[EventType];
`;

  const runtime = `${banner}
/** Every operation: method, path (without /api/v1), parameters, whether it takes a body and which fields take files. */
export const OPERATIONS = {
${table.join('\n')}
};

/** The 13 event types, in the order SPEC lists them. */
export const EVENT_TYPES = ${JSON.stringify(EVENT_TYPES)};
`;
  const runtimeTypes = `${banner}
import type { EventType } from './api.js';

export interface OperationEntry {
  method: string;
  /** Without /api/v1; path parameters in braces. */
  path: string;
  pathParams: string[];
  query: string[];
  body: boolean;
  /** Fields that take an uploaded file (multipart/form-data); \`[]\` stands for an index. */
  files: string[];
  response: 'json' | 'binary' | 'none';
}

export declare const OPERATIONS: Record<string, OperationEntry>;
export declare const EVENT_TYPES: readonly EventType[];
`;
  return { 'api.d.ts': api, 'operations.js': runtime, 'operations.d.ts': runtimeTypes };
}

/** The generated files as written: formatted with the repository's Prettier settings. */
export async function renderClientFiles(doc?: Document): Promise<GeneratedFiles> {
  const files = generateClient(doc ?? (await buildOpenApiDocument()));
  const options = (await prettier.resolveConfig(path.join(GENERATED_DIR, 'api.d.ts'))) ?? {};
  const result: GeneratedFiles = {};
  for (const [name, text] of Object.entries(files)) {
    result[name] = await prettier.format(text, { ...options, parser: name.endsWith('.ts') ? 'typescript' : 'babel' });
  }
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const files = await renderClientFiles();
  fs.mkdirSync(GENERATED_DIR, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(GENERATED_DIR, name), text);
  console.log(`wrote ${Object.keys(files).join(', ')} in ${path.relative(ROOT, GENERATED_DIR)}`);
}
