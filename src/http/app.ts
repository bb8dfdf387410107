/** Builds the Fastify app: cross-cutting plugins first, then every feature's routes under both prefixes. */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormatsModule from 'ajv-formats';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { refusal } from '../errors.js';
import type { InstanceService } from '../instance-registry/service.js';
import { AccessLog } from './access-log.js';
import { registerAuth, type CredentialResolvers, type RequestRouting } from './auth.js';
import { registerDocsPage } from './docs-page.js';
import { shareComponents } from './openapi-components.js';
import { documentUpgradeRoutes, finishOpenApiDocument, openApiDocument } from './openapi.js';
import { registerErrorHandling } from './errors.js';
import { ErrorReply, schemaToValidate } from './schemas.js';
import type { SlidingWindowStore } from './rate-limit.js';
import type { RoutePlugin } from './types.js';
import { API_PREFIX, deprecateUnprefixedUpgrades, registerVersioning } from './versioning.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export interface AppOptions {
  config: Config;
  clock: Clock;
  adminKey: string;
  instances: InstanceService;
  rateLimitStore: SlidingWindowStore;
  /** Credentials added by feature modules (see http/auth.ts). */
  resolvers?: CredentialResolvers;
  /** Feature routes, registered under /api/v1 and again unprefixed (deprecated). */
  routes: RoutePlugin[];
  /** Routes registered once, outside the versioned tree (e.g. /metrics). */
  rootRoutes?: RoutePlugin[];
  logger: FastifyBaseLogger;
  /** See AuthOptions.standby. */
  standby?: () => boolean;
  /** See AuthOptions.routing (cluster mode). */
  routing?: RequestRouting;
  /** Told about every answer (metrics): the route's template, never the raw URL. */
  onAnswered?: (method: string, route: string | undefined, status: number, seconds: number) => void;
}

function validators() {
  // allErrors: a 400 lists every problem found (http/errors.ts keeps the first MAX_VALIDATION_DETAILS).
  const base: AjvOptions = { allErrors: true, useDefaults: true, strict: false };
  // Bodies are validated strictly (a number is not a string); query, params and headers are text
  // on the wire, so scalar coercion is allowed there.
  const body = addFormats(new Ajv({ ...base, coerceTypes: false, removeAdditional: false }));
  const text = addFormats(new Ajv({ ...base, coerceTypes: 'array', removeAdditional: false }));
  return { body, text };
}

/**
 * Validators and serializers are compiled once per schema in a process. Every route is registered
 * twice (under /api/v1 and unprefixed), and a process that builds several apps (a test file) would
 * otherwise compile every schema again each time: most of the time an app takes to start. Ajv keeps
 * what it compiled by schema object, so one pair of Ajv instances serves every app. The response
 * serializers (Fastify's own compiler, fast-json-stringify, which reads nothing but the JSON of the
 * schema, the shared schemas and the options) are kept by that JSON: routes build their error
 * replies afresh (schemas.ts errorResponses), so the same schema comes as different objects.
 */
const sharedValidators = validators();
type Serializer = (data: unknown) => string;
type SerializerFactory = (externalSchemas: unknown, options: unknown) => (route: { schema: unknown }) => Serializer;
const fastifySerializers = createRequire(createRequire(import.meta.url).resolve('fastify'))(
  '@fastify/fast-json-stringify-compiler',
) as () => SerializerFactory;
const serializers = new Map<string, Serializer>();
const cachedSerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = fastifySerializers()(externalSchemas, options);
  const context = JSON.stringify([externalSchemas, options]);
  return (route) => {
    const key = `${context}\0${JSON.stringify(route.schema)}`;
    let serialize = serializers.get(key);
    if (!serialize) serializers.set(key, (serialize = compile(route)));
    return serialize;
  };
};

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, clock } = options;
  const app = Fastify({
    loggerInstance: options.logger,
    logController: new AccessLog(),
    bodyLimit: config.bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && UUID.test(incoming) ? incoming : randomUUID();
    },
    // Behind a reverse proxy (TRUST_PROXY): request.ip is the client's, request.protocol what it used.
    trustProxy: config.trustProxy,
    // The reply lists the problems (http/errors.ts); Fastify's own message of every Ajv error (one
    // per array item with allErrors) is not needed, and costly for big malformed bodies.
    schemaErrorFormatter: (_errors, dataVar) => refusal(`${dataVar} is invalid`),
    schemaController: { compilersFactory: { buildSerializer: cachedSerializers as never } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are JSON only: a text/plain body gets 415 instead of a confusing validation error.
  app.removeContentTypeParser('text/plain');

  const { body, text } = sharedValidators;
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schemaToValidate(schema) as object));

  const onAnswered = options.onAnswered;
  if (onAnswered) {
    // Callback hooks (here and below): an async one costs every request a promise and a turn.
    app.addHook('onResponse', (request, reply, done) => {
      onAnswered(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('X-Request-ID', request.id);
    done();
  });

  // The one error body, referenced by every route's error replies as `Error#`.
  app.addSchema(ErrorReply);
  registerErrorHandling(
    app,
    options.routing ? (error, request, reply) => options.routing!.serveElsewhere(error, request, reply) : undefined,
  );
  const routing = options.routing;
  if (routing) app.addHook('preHandler', async (request) => routing.beforeHandler(request));
  registerVersioning(app, clock);
  await app.register(cors, {
    origin: config.corsOrigin === '*' ? '*' : config.corsOrigin.split(',').map((o) => o.trim()),
    // Every method the API uses (the plugin's default leaves out DELETE, PATCH and PUT).
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    // What a browser client reads from answers: request ids, retry hints, deprecation.
    exposedHeaders: ['X-Request-ID', 'Retry-After', 'Deprecation', 'Sunset', 'Link'],
  });
  await app.register(swagger, {
    openapi: openApiDocument(),
    // Shared schemas keep their $id as their name under components.schemas (e.g. `Error`).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (document) =>
      'openapiObject' in document
        ? shareComponents(finishOpenApiDocument(document.openapiObject as Parameters<typeof finishOpenApiDocument>[0]))
        : document.swaggerObject,
  });
  await app.register(websocket, {
    options: { maxPayload: 64 * 1024 },
    // A client's bad frame (oversize, malformed) or dropped connection is the client's doing: one
    // short debug line and the socket goes, never an error-level line with a stack.
    errorHandler: (error, socket, request) => {
      const code = (error as { code?: string }).code;
      if (code?.startsWith('WS_ERR_') || code === 'ECONNRESET' || code === 'EPIPE')
        request.log.debug({ code, reason: error.message }, 'websocket client error');
      else request.log.warn({ code, reason: error.message }, 'websocket error');
      socket.terminate();
    },
  });
  deprecateUnprefixedUpgrades(app.websocketServer);
  documentUpgradeRoutes(app);
  registerAuth(app, {
    adminKey: options.adminKey,
    instances: options.instances,
    limits: config.rateLimit,
    store: options.rateLimitStore,
    clock,
    ...(options.resolvers ? { resolvers: options.resolvers } : {}),
    ...(options.standby ? { standby: options.standby } : {}),
    ...(options.routing ? { routing: options.routing } : {}),
  });

  for (const plugin of options.rootRoutes ?? []) await app.register(plugin);
  for (const prefix of [API_PREFIX, '']) {
    await app.register(
      async (scope) => {
        for (const plugin of options.routes) await scope.register(plugin);
      },
      { prefix },
    );
  }

  app.get(`${API_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
  registerDocsPage(app);
  return app;
}
