/**
 * /mcp: the MCP Streamable HTTP endpoint. Checks Host/Origin (DNS rebinding), authenticates the
 * key, then hands the raw request to the SDK transport: of the caller's session (Mcp-Session-Id),
 * a new session (initialize), or a one-request server (stateless calls).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { McpConfig } from '../config.js';
import { AppError, errors } from '../errors.js';
import type { CredentialResolvers } from '../http/auth.js';
import type { RoutePlugin } from '../http/types.js';
import { API_PREFIX } from '../http/versioning.js';
import type { InstanceService } from '../instance-registry/service.js';
import { sameSecret } from '../instance-registry/tokens.js';
import type { AdminActingKeys, Caller } from './rest.js';
import { mcpSdk } from './sdk.js';
import { identityOf, type McpService, type RequestFacts } from './service.js';

export interface McpRouteOptions {
  service: McpService;
  config: McpConfig;
  adminKey: string;
  instances: InstanceService;
  resolvers: CredentialResolvers;
  keys: AdminActingKeys;
  active: () => boolean;
  bodyLimitBytes: number;
}

/** `apikey`, or `Authorization: Bearer <key>` (what most MCP clients can set). */
export function mcpKeyOf(request: FastifyRequest): string | undefined {
  const apikey = request.headers.apikey;
  if (typeof apikey === 'string' && apikey !== '') return apikey;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

function hostnameOf(hostHeader: string): string | undefined {
  try {
    return new URL(`http://${hostHeader}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** DNS rebinding: a page on evil.example resolving to 127.0.0.1 still sends `Host: evil.example`. */
export function checkHostAndOrigin(config: McpConfig, host: string | undefined, origin: string | undefined): void {
  if (config.allowedHosts !== '*') {
    const name = host ? hostnameOf(host) : undefined;
    if (!name || !config.allowedHosts.includes(name)) throw errors.mcpHostRefused(host ?? '');
  }
  if (origin === undefined || config.allowedOrigins === '*') return;
  const normalised = origin.toLowerCase().replace(/\/$/, '');
  if (config.allowedOrigins) {
    if (!config.allowedOrigins.includes(normalised)) throw errors.mcpOriginRefused(origin);
    return;
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(normalised);
  } catch {
    parsed = undefined;
  }
  const allowed =
    parsed && /^https?:$/.test(parsed.protocol) && (config.allowedHosts === '*' || config.allowedHosts.includes(parsed.hostname));
  if (!allowed) throw errors.mcpOriginRefused(origin);
}

/** A web user's access token (a JWT: three base64url parts); anything else is never shown to the user resolvers. */
const ACCESS_TOKEN_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The caller of a key, in the REST auth hook's order: the admin key; a token a module's instance
 * resolver accepts (a failover group's), or knows but refuses on /mcp itself with a 403 (it only
 * takes some routes: a `routed` caller); an instance token; a web user's access token (the admin
 * resolvers, with the user's role). Bad keys throw the REST errors (401).
 */
export async function mcpCallerOf(
  key: string | undefined,
  request: FastifyRequest,
  options: Pick<McpRouteOptions, 'adminKey' | 'resolvers' | 'instances' | 'keys'>,
): Promise<Caller> {
  if (key === undefined) throw errors.invalidApiKey();
  if (sameSecret(key, options.adminKey)) return { kind: 'admin', key };
  // The module's own acting keys never come from outside.
  if (options.keys.instanceIdOf(key) !== undefined) throw errors.invalidApiKey();
  for (const resolve of options.resolvers.instance) {
    try {
      const instance = await resolve(key, request);
      if (instance) return { kind: 'instance', key, instance };
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 403) throw error;
      return { kind: 'routed', key, accepts: (method, path) => takesRoute(resolve, key, request, method, path) };
    }
  }
  if (ACCESS_TOKEN_SHAPE.test(key)) {
    for (const resolve of options.resolvers.admin) {
      const user = await resolve(request);
      if (user) return { kind: 'admin', key, user };
    }
    throw errors.invalidApiKey();
  }
  return { kind: 'instance', key, instance: await options.instances.authenticate(key) };
}

/**
 * Whether a resolver takes the key on an instance route (`GET /chat/list`, a path under /api/v1 as
 * Fastify names it): asked with this request seen as that route's. A 403 is a no; another refusal
 * (no group member can serve now) still means the route takes the key.
 */
async function takesRoute(
  resolve: CredentialResolvers['instance'][number],
  key: string,
  request: FastifyRequest,
  method: string,
  path: string,
): Promise<boolean> {
  const url = `${API_PREFIX}${path}`;
  const asRoute = Object.create(request, {
    method: { value: method },
    routeOptions: { value: { ...request.routeOptions, method, url } },
  }) as FastifyRequest;
  try {
    return (await resolve(key, asRoute)) !== undefined;
  } catch (error) {
    if (error instanceof AppError && error.status === 403) return false;
    return error instanceof AppError;
  }
}

const JSONRPC_CODE: Record<number, number> = { 400: -32600, 401: -32001, 403: -32003, 404: -32004, 503: -32000 };

/** Errors before the SDK takes over, as a JSON-RPC error (what MCP clients parse) with the REST code. */
function sendError(reply: FastifyReply, error: AppError): FastifyReply {
  if (error.status === 401) void reply.header('WWW-Authenticate', 'Bearer realm="waygate", error="invalid_token"');
  return reply.code(error.status).send({
    jsonrpc: '2.0',
    id: null,
    error: { code: JSONRPC_CODE[error.status] ?? -32000, message: error.message, data: { code: error.code, status: error.status } },
  });
}

export function mcpRoutes(options: McpRouteOptions): RoutePlugin {
  const { service } = options;

  const callerOf = (request: FastifyRequest) => mcpCallerOf(mcpKeyOf(request), request, options);

  return async (app) => {
    // Open event streams would keep the server from closing.
    app.addHook('preClose', async () => service.closeAll());

    app.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      config: { access: 'none', leaderOnly: true },
      // Tool arguments may carry media as base64 (send_media): the /send/media limit, not the JSON one.
      bodyLimit: options.bodyLimitBytes,
      schema: {
        // Not a REST route: documented in docs/mcp.md, kept out of the /api/v1 OpenAPI document.
        hide: true,
        tags: ['MCP'],
        summary: 'MCP server (Streamable HTTP)',
        description:
          "The Model Context Protocol endpoint for AI agents (docs/mcp.md). Key: the instance token (tools act on that instance), the admin key or a web user's access token (admin tools; instance tools take `instanceId`; viewers get the read-only tools), or a failover-group token (the send tools), in `apikey` or `Authorization: Bearer` (access tokens: Bearer only). POST carries JSON-RPC; an `initialize` opens a session (`Mcp-Session-Id` reply header) whose GET stream carries resource updates; other POSTs without a session are answered statelessly; DELETE closes a session. 401 bad key, 403 Host/Origin not allowed (MCP_ALLOWED_HOSTS, MCP_ALLOWED_ORIGINS), 404 unknown session. Not under /api/v1: MCP versions itself at initialisation.",
        security: [{ apikey: [] }],
      },
      handler: async (request, reply) => {
        let caller: Caller;
        try {
          checkHostAndOrigin(options.config, request.headers.host, request.headers.origin);
          if (!options.active()) throw errors.standby();
          caller = await callerOf(request);
        } catch (error) {
          if (error instanceof AppError) return sendError(reply, error);
          throw error;
        }
        const sessionId = request.headers['mcp-session-id'];
        const body: unknown = request.method === 'POST' ? request.body : undefined;
        let handle: (raw: FastifyRequest['raw'], res: FastifyReply['raw']) => Promise<void>;
        try {
          if (typeof sessionId === 'string') {
            const session = service.session(sessionId, caller);
            if (request.method === 'GET') service.watchStream(session, reply.raw);
            handle = (raw, res) => session.transport.handleRequest(raw, res, body);
          } else if (request.method === 'POST' && (await mcpSdk()).isInitializeRequest(body)) {
            const transport = await service.openSession(caller);
            handle = (raw, res) => transport.handleRequest(raw, res, body);
          } else if (request.method === 'POST') {
            const once = await service.stateless(caller);
            reply.raw.once('close', () => void once.close());
            handle = (raw, res) => once.transport.handleRequest(raw, res, body);
          } else {
            // No session: no event stream to open and nothing to close (the spec's 405).
            void reply.header('Allow', 'POST');
            throw errors.mcpSessionNeeded();
          }
        } catch (error) {
          if (error instanceof AppError) return sendError(reply, error);
          throw error;
        }
        // From here the SDK writes the response: carry over what the hooks set (request id, CORS).
        await reply.hijack();
        for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
        reply.raw.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id, X-Request-ID');
        // This request's caller (a user's fresh access token, its current role) is the one tools act as.
        const facts: RequestFacts = { remoteAddress: request.ip, caller };
        Object.assign(request.raw, { auth: { token: identityOf(caller), clientId: caller.kind, scopes: [], extra: { facts } } });
        try {
          await handle(request.raw, reply.raw);
        } catch (error) {
          // The reply is the SDK's now: the error handler cannot answer; end the response here.
          request.log.error({ err: error }, 'MCP request failed');
          if (!reply.raw.headersSent) {
            reply.raw.writeHead(500, { 'content-type': 'application/json' });
            reply.raw.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'internal error' } }));
          } else reply.raw.end();
        }
      },
    });
  };
}
