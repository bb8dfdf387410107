/**
 * Tools act through the gateway's own REST routes, in process (`app.inject`), with the caller's key:
 * authentication, validation, rate limits, error texts and codes are the REST API's, not a copy.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Instance } from '../instance-registry/service.js';
import { sameSecret } from '../instance-registry/tokens.js';

/** Who called /mcp: an instance (its token, or a token a resolver accepts) or the admin key. */
export type Caller = { kind: 'instance'; key: string; instance: Instance } | { kind: 'admin'; key: string };

export interface RestAnswer {
  status: number;
  body: unknown;
  headers: Record<string, string | string[] | number | undefined>;
}

/** A 4xx/5xx answer of a REST route, carried to the tool result with its message and code. */
export class RestFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'RestFailure';
  }
}

export interface RestCall {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path under /api/v1, e.g. `/send/text`. */
  path: string;
  query?: Record<string, string | number | boolean | string[] | undefined>;
  body?: unknown;
}

const PREFIX = 'mcp.';

/**
 * The credential an admin caller uses on instance routes: the admin key is refused there, and only
 * token hashes are stored, so the module answers for itself with a per-process secret that never
 * leaves the process (it is only ever sent through `app.inject`).
 */
export class AdminActingKeys {
  private readonly secret = randomBytes(32).toString('base64url');

  keyFor(instanceId: string): string {
    return `${PREFIX}${this.secret}.${instanceId}`;
  }

  /** The instance id a key stands for, or undefined when it is not one of ours. */
  instanceIdOf(key: string): string | undefined {
    if (!key.startsWith(PREFIX)) return undefined;
    const rest = key.slice(PREFIX.length);
    const dot = rest.indexOf('.');
    if (dot <= 0) return undefined;
    return sameSecret(rest.slice(0, dot), this.secret) ? rest.slice(dot + 1) : undefined;
  }
}

export class GatewayRest {
  private app: FastifyInstance | undefined;

  constructor(private readonly keys: AdminActingKeys) {}

  /** The app whose routes are called (known once the module's routes are registered). */
  attach(app: FastifyInstance): void {
    this.app = app;
  }

  /**
   * Calls a route as the caller. `instanceId` picks the instance an admin caller acts on (instance
   * routes); admin routes are called with the admin key. Resolves with 2xx answers, throws RestFailure.
   */
  async call(
    caller: Caller,
    call: RestCall,
    options: { instanceId?: string; admin?: boolean; remoteAddress?: string } = {},
  ): Promise<RestAnswer> {
    let key = caller.key;
    if (caller.kind === 'admin' && !options.admin) {
      if (!options.instanceId) throw new RestFailure(400, 'bad_request', 'instanceId is required with the admin key', undefined);
      key = this.keys.keyFor(options.instanceId);
    }
    if (!this.app) throw new Error('MCP REST client used before the app exists');
    const response = await this.app.inject({
      method: call.method,
      url: `/api/v1${call.path}`,
      headers: { apikey: key, ...(call.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(call.query ? { query: definedOnly(call.query) } : {}),
      ...(call.body !== undefined ? { payload: JSON.stringify(call.body) } : {}),
      ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}),
    });
    const type = String(response.headers['content-type'] ?? '');
    const body: unknown = type.includes('json') && response.body !== '' ? JSON.parse(response.body) : response.rawPayload;
    if (response.statusCode >= 400) {
      const error = body && typeof body === 'object' && 'error' in body ? body : { error: `HTTP ${response.statusCode}` };
      const { error: message, code } = error as { error: unknown; code?: unknown };
      throw new RestFailure(response.statusCode, typeof code === 'string' ? code : undefined, String(message), body);
    }
    return { status: response.statusCode, body, headers: response.headers };
  }
}

function definedOnly(query: NonNullable<RestCall['query']>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value : String(value);
  }
  return out;
}
