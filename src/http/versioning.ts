/**
 * Every route answers under /api/v1 and, deprecated, without the prefix. Unprefixed answers carry
 * `Deprecation: true` and `Sunset: 2027-01-01`; from that day on they answer 410.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../clock.js';
import { errors } from '../errors.js';

export const API_PREFIX = '/api/v1';
export const SUNSET_DATE = '2027-01-01';
const SUNSET_AT = Date.parse(`${SUNSET_DATE}T00:00:00Z`);

/** Routes that exist once, outside versioning (docs, metrics). */
export const UNVERSIONED = new Set(['/docs', '/metrics', `${API_PREFIX}/openapi.json`]);

export function isDeprecatedPath(routeUrl: string): boolean {
  if (routeUrl.startsWith(`${API_PREFIX}/`) || routeUrl === API_PREFIX) return false;
  if (UNVERSIONED.has(routeUrl) || routeUrl.startsWith('/docs')) return false;
  return true;
}

export function registerVersioning(app: FastifyInstance, clock: Clock): void {
  // Unprefixed duplicates are kept out of the OpenAPI document.
  app.addHook('onRoute', (route) => {
    if (route.config?.unversioned) return;
    if (isDeprecatedPath(route.url ?? route.path)) {
      route.schema = { ...(route.schema ?? {}), hide: true };
    }
  });
  // A callback hook: an async one costs every request a promise and a turn.
  app.addHook('onRequest', (request, reply, done) => {
    const { url, config } = request.routeOptions;
    if (url === undefined || config.unversioned || !isDeprecatedPath(url)) return done();
    if (clock.now() >= SUNSET_AT) return done(errors.sunset());
    for (const [name, value] of deprecationHeaders(request.url)) void reply.header(name, value);
    done();
  });
}

/** The headers of an unprefixed answer; `url` is the path and query the client asked for. */
export function deprecationHeaders(url: string): [string, string][] {
  return [
    ['Deprecation', 'true'],
    ['Sunset', SUNSET_DATE],
    ['Link', `<${API_PREFIX}${url}>; rel="successor-version"`],
  ];
}

/**
 * A WebSocket upgrade answers with 101 written by the ws server, not by the reply: the unprefixed
 * stream's deprecation headers go into that answer here.
 */
export function deprecateUnprefixedUpgrades(server: {
  on(event: 'headers', listener: (headers: string[], request: IncomingMessage) => void): unknown;
}): void {
  server.on('headers', (headers, request) => {
    const url = request.url ?? '/';
    if (!isDeprecatedPath(url.split('?')[0]!)) return;
    for (const [name, value] of deprecationHeaders(url)) headers.push(`${name}: ${value}`);
  });
}
