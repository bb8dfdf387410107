/**
 * Tools act through the gateway's own REST routes, in process (`app.inject`), with the caller's key:
 * authentication, validation, rate limits, error texts and codes are the REST API's, not a copy.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AdminCaller } from '../http/auth.js';
import type { Instance } from '../instance-registry/service.js';
import { sameSecret } from '../instance-registry/tokens.js';

/**
 * Who called /mcp:
 * - `instance`: an instance token, or a token a credential resolver answers with one instance;
 * - `admin`: the admin key, or a web user's access token (`user`: its role; viewers only read);
 * - `routed`: a token a resolver knows but that only some routes take (a failover group's, which
 *   sends through whichever member serves): `accepts` says which routes, each call lets the route decide.
 */
export type Caller =
  | { kind: 'instance'; key: string; instance: Instance }
  | { kind: 'admin'; key: string; user?: AdminCaller }
  | { kind: 'routed'; key: string; accepts: (method: string, path: string) => Promise<boolean> };

/** Viewers: the read-only tools only. */
export function readOnly(caller: Caller): boolean {
  return caller.kind === 'admin' && caller.user?.readOnly === true;
}

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
   * routes); admin routes are called with the caller's own credential (the admin key, or a user's
   * access token, so the REST role rules apply). Resolves with 2xx answers, throws RestFailure.
   */
  async call(
    caller: Caller,
    call: RestCall,
    options: { instanceId?: string; admin?: boolean; remoteAddress?: string } = {},
  ): Promise<RestAnswer> {
    let credential: Record<string, string> = { apikey: caller.key };
    if (caller.kind === 'admin' && !options.admin) {
      if (!options.instanceId) throw new RestFailure(400, 'bad_request', 'instanceId is required with the admin key', undefined);
      credential = { apikey: this.keys.keyFor(options.instanceId) };
    } else if (caller.kind === 'admin' && caller.user) {
      credential = { authorization: `Bearer ${caller.key}` };
    }
    if (!this.app) throw new Error('MCP REST client used before the app exists');
    const response = await this.app.inject({
      method: call.method,
      url: `/api/v1${call.path}`,
      headers: { ...credential, ...(call.body !== undefined ? { 'content-type': 'application/json' } : {}) },
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
