/**
 * web/: serves the management web interface (built from ../../web by `npm run build:web` into
 * web/dist) at `/`, with a fallback to index.html for the interface's own paths. API, docs, metrics
 * and MCP paths are never answered here. When the build is missing, `/` says how to make it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModuleFactory } from '../modules.js';
import type { RoutePlugin } from '../http/types.js';

/** src/web/ and dist/web/ are both two levels below the repository root. */
export const WEB_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/dist');

/** Paths that belong to the API and other root services, never to the interface. */
const RESERVED = /^\/(api|docs|metrics|mcp|ws)(\/|$|\?)/;

// Everything the interface loads comes from this server: no CDN, no external fonts.
const CSP =
  "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

const MISSING_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Waygate</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>The web interface is not built</h1>
<p>The gateway is running, but the management interface has not been built in this copy.
Build it from the repository folder with</p>
<pre style="background:#f3f3f3;padding:0.75rem">npm run build:web</pre>
<p>(<code>npm install</code> and <code>npm start</code> also build it) and reload this page.
The API is available at <a href="/api/v1/openapi.json">/api/v1</a> and documented at <a href="/docs">/docs</a>.</p>
</body></html>`;

export function webRoutes(root: string = WEB_DIST): RoutePlugin {
  return async (app) => {
    const built = fs.existsSync(path.join(root, 'index.html'));
    if (built) await app.register(fastifyStatic, { root, serve: false });

    const serve = async (request: FastifyRequest, reply: FastifyReply, wanted: string) => {
      if (RESERVED.test(`/${wanted}`)) return reply.callNotFound();
      const html = (request.headers.accept ?? '').includes('text/html');
      if (!built) {
        if (wanted !== '' && !html) return reply.callNotFound();
        return reply.status(503).type('text/html; charset=utf-8').header('Cache-Control', 'no-store').send(MISSING_PAGE);
      }
      const file = path.resolve(root, wanted);
      const inside = file.startsWith(root + path.sep);
      if (inside && wanted !== '' && fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
        // Vite names assets by content hash: they never change under the same name.
        const immutable = wanted.startsWith('assets/');
        void reply.header('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
        return reply.sendFile(path.relative(root, file), { cacheControl: false });
      }
      // The interface's own paths (/instances/..., /login) are routed in the browser.
      if (!html && wanted !== '') return reply.callNotFound();
      void reply.header('Content-Security-Policy', CSP).header('Cache-Control', 'no-cache').header('X-Content-Type-Options', 'nosniff');
      return reply.sendFile('index.html', { cacheControl: false });
    };

    const options = { config: { access: 'none' as const, unversioned: true }, schema: { hide: true } };
    app.get('/', options, (request, reply) => serve(request, reply, ''));
    app.get('/*', options, (request, reply) => serve(request, reply, (request.params as { '*': string })['*']));
  };
}

export const webModule: ModuleFactory = () => ({ name: 'web', rootRoutes: [webRoutes()] });
