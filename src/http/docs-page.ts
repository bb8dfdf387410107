/**
 * The API reference page at /docs (Scalar), built on its first request. The plugin's module holds
 * its browser bundle (4.4 MB of source) as a string: loading it costs ~20 MB of heap, a quarter of
 * an idle gateway's, which a process nobody reads the docs on should not carry. The plugin is
 * registered in a Fastify instance of its own, made when /docs is first asked for; the gateway's
 * routes pass each docs request to it (`inject`) and answer with what it returned.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { API_PREFIX } from './versioning.js';

const DOCS_PREFIX = '/docs';
/** What the plugin serves under its prefix: a redirect to the slash, the page, its script. */
const DOCS_ROUTES = [DOCS_PREFIX, `${DOCS_PREFIX}/`, `${DOCS_PREFIX}/js/scalar.js`];
/** The headers of the plugin's answers that are passed on; CORS and request ids come from the gateway's own hooks. */
const PASSED_HEADERS = ['content-type', 'location', 'content-disposition'];

// The page works offline and is ours: no fonts from the vendor's CDN, no buttons or agents that
// call the vendor's cloud, no telemetry.
const configuration = {
  url: `${API_PREFIX}/openapi.json`,
  pageTitle: 'Waygate API reference',
  withDefaultFonts: false,
  hideClientButton: true,
  showDeveloperTools: 'never',
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
};

type ReferencePlugin = typeof import('@scalar/fastify-api-reference').default;
const loadReferencePlugin = async (): Promise<ReferencePlugin> => (await import('@scalar/fastify-api-reference')).default;

async function buildDocsApp(load: () => Promise<ReferencePlugin>): Promise<FastifyInstance> {
  const scalar = await load();
  const docs = Fastify({ logger: false });
  await docs.register(scalar, { routePrefix: DOCS_PREFIX, configuration: configuration as Record<string, unknown> });
  await docs.ready();
  return docs;
}

/** `load` imports the plugin's module (tests count its calls). */
export function registerDocsPage(app: FastifyInstance, load = loadReferencePlugin): void {
  let docsApp: Promise<FastifyInstance> | undefined;
  // A failed build (a broken install) is tried again on the next request, not kept.
  const docs = () =>
    (docsApp ??= buildDocsApp(load).catch((error: unknown) => {
      docsApp = undefined;
      throw error;
    }));
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    // A fixed host: the plugin builds a URL from it only for the path (its redirect is relative),
    // and a malformed Host header of the client's would make that throw (a 500).
    const answer = await (await docs()).inject({ method: 'GET', url: request.url, headers: { host: 'localhost' } });
    void reply.code(answer.statusCode);
    for (const name of PASSED_HEADERS) {
      const value = answer.headers[name];
      if (typeof value === 'string') void reply.header(name, value);
    }
    // A redirect has no body (and so no content type).
    return answer.rawPayload.length === 0 ? reply.send() : reply.send(answer.rawPayload);
  };
  for (const url of DOCS_ROUTES) app.get(url, { schema: { hide: true } }, serve);
  app.addHook('onClose', async () => {
    if (docsApp) await (await docsApp.catch(() => undefined))?.close();
  });
}
