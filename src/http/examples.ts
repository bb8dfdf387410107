/**
 * Request-body examples composed from their schemas, for the OpenAPI document (finishOpenApiDocument):
 * a body without a hand-written example gets one built from its schema's leaves, and only if the
 * built value passes that schema. The rule (docs/routes.md):
 * - a value's own `examples[0]` wins, then `const`, then `default`, then the first `enum` value;
 * - an object has its required properties only (below `minProperties`, the first optional ones
 *   that carry their own `examples`, then the first that can be made): a body that should show more
 *   gets a hand-written example;
 * - an array has `minItems` items (at least one), distinct ones where the item gives several examples;
 * - a union (`anyOf`/`oneOf`) is its first branch whose value passes the union;
 * - a string needs an example, a value, or a known `format` (uri, email, date-time): a plain or patterned
 *   string without one cannot be made up realistically, so the body gets no example and the OpenAPI
 *   test names it; a number is its lowest allowed value, a boolean `true`.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats' CommonJS default export, typed for the ESM import (as in app.ts).
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

type Schema = Record<string, any>;

/** Values for the string formats the bodies use, when the field has no example of its own. */
const FORMAT_EXAMPLES: Record<string, string> = {
  uri: 'https://example.com/',
  url: 'https://example.com/',
  email: 'maria@example.com',
  'date-time': '2026-01-15T09:30:00Z',
  date: '2026-01-15',
  uuid: '0f8fad5b-d9cb-469f-a165-70867728950e',
};

/** A schema of which no realistic value can be made: `where` is its place in the body. */
export class NoExample extends Error {
  constructor(readonly where: string) {
    super(`no example for ${where || 'the body'}`);
  }
}

/** Checks values against schemas as the body validator does (http/app.ts), without filling defaults. */
export class ExampleComposer {
  private readonly ajv = addFormats(new Ajv({ strict: false, allErrors: false, useDefaults: false, coerceTypes: false }));
  private readonly validators = new WeakMap<Schema, ValidateFunction>();

  /** Whether `value` passes `schema`. */
  passes(schema: Schema, value: unknown): boolean {
    let validate = this.validators.get(schema);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.validators.set(schema, validate);
    }
    return validate(value);
  }

  /** The example of a body schema: composed, then checked; throws NoExample when none can be made or it fails. */
  compose(schema: Schema): unknown {
    const value = this.valueOf(schema, '');
    if (!this.passes(schema, value)) throw new NoExample(`the composed body ${JSON.stringify(value)}`);
    return value;
  }

  private valueOf(schema: Schema, where: string): unknown {
    if (Array.isArray(schema.examples) && schema.examples.length > 0) return structuredClone(schema.examples[0]);
    if (schema.example !== undefined) return structuredClone(schema.example);
    if ('const' in schema) return schema.const;
    if ('default' in schema) return structuredClone(schema.default);
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
    const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
    if (branches) return this.unionValue(schema, branches, where);
    if (Array.isArray(schema.allOf)) {
      return Object.assign({}, ...(schema.allOf as Schema[]).map((part) => this.valueOf({ type: 'object', ...part }, where)));
    }
    const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : schema.type;
    switch (type) {
      case 'object':
        return this.objectValue(schema, where);
      case 'array':
        return this.arrayValue(schema, where);
      case 'string':
        if (typeof schema.format === 'string' && FORMAT_EXAMPLES[schema.format]) return FORMAT_EXAMPLES[schema.format];
        throw new NoExample(where);
      case 'integer':
      case 'number':
        return this.numberValue(schema, type);
      case 'boolean':
        return true;
      case 'null':
        return null;
      default:
        if (schema.properties) return this.objectValue(schema, where);
        throw new NoExample(where);
    }
  }

  private unionValue(schema: Schema, branches: Schema[], where: string): unknown {
    let first: NoExample | undefined;
    for (const [i, branch] of branches.entries()) {
      try {
        const value = this.valueOf(branch, where);
        if (this.passes(schema, value)) return value;
        first ??= new NoExample(`${where} (branch ${i}: ${JSON.stringify(value)} does not pass the union)`);
      } catch (error) {
        if (!(error instanceof NoExample)) throw error;
        first ??= error;
      }
    }
    throw first ?? new NoExample(where);
  }

  private objectValue(schema: Schema, where: string): Record<string, unknown> {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const required = new Set<string>((schema.required as string[] | undefined) ?? []);
    const out: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(properties)) {
      if (required.has(name)) out[name] = this.valueOf(property, `${where}.${name}`);
    }
    // Below minProperties: optional properties with an example of their own first, then any that can be made.
    const least = (schema.minProperties as number | undefined) ?? 0;
    const optional = Object.entries(properties).filter(([name]) => !required.has(name));
    for (const [name, property] of [...optional.filter(([, p]) => hasOwnExample(p)), ...optional.filter(([, p]) => !hasOwnExample(p))]) {
      if (Object.keys(out).length >= least) break;
      if (name in out) continue;
      try {
        out[name] = this.valueOf(property, `${where}.${name}`);
      } catch (error) {
        if (!(error instanceof NoExample)) throw error;
      }
    }
    if (Object.keys(out).length < least) throw new NoExample(`${where} (minProperties ${least})`);
    return out;
  }

  private arrayValue(schema: Schema, where: string): unknown[] {
    const items = (schema.items ?? {}) as Schema;
    const count = Math.max(1, (schema.minItems as number | undefined) ?? 0);
    const given = Array.isArray(items.examples) ? (items.examples as unknown[]) : [];
    if (given.length >= count) return given.slice(0, count).map((value) => structuredClone(value));
    if (schema.uniqueItems && count > 1) throw new NoExample(`${where}[] (${count} distinct items)`);
    return Array.from({ length: count }, () => this.valueOf(items, `${where}[]`));
  }

  private numberValue(schema: Schema, type: 'integer' | 'number'): number {
    const low =
      typeof schema.minimum === 'number'
        ? schema.minimum
        : typeof schema.exclusiveMinimum === 'number'
          ? schema.exclusiveMinimum + (type === 'integer' ? 1 : 0.5)
          : undefined;
    const high = typeof schema.maximum === 'number' ? schema.maximum : undefined;
    const value = low ?? (high !== undefined && high < 1 ? high : 1);
    return type === 'integer' ? Math.ceil(value) : value;
  }
}

/** Whether a property carries an example of its own (preferred when an object needs more than its required properties). */
function hasOwnExample(schema: Schema): boolean {
  return (Array.isArray(schema.examples) && schema.examples.length > 0) || schema.example !== undefined;
}
