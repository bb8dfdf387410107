/** The Chatwoot integration module (docs/chatwoot.md): settings routes, the webhook, and a durable sink. */
import { Gauge } from 'prom-client';
import type { ModuleFactory } from '../../modules.js';
import { API_PREFIX } from '../../http/versioning.js';
import { Agent } from 'undici';
import { nonPublicTarget, publicOnlyLookup } from '../../media/address.js';
import { VERSION } from '../../version.js';
import { ChatwootRepo } from './repo.js';
import { chatwootRoutes } from './routes.js';
import { ChatwootService } from './service.js';
import { ChatwootSink } from './sink.js';

export const chatwootModule: ModuleFactory = async (deps) => {
  // The base URL is set with an instance token: private targets only with WEBHOOK_ALLOW_PRIVATE_URLS,
  // checked when it is set and again at every connection against the resolved addresses.
  const guarded = deps.config.webhook.allowPrivateUrls ? undefined : new Agent({ connect: { lookup: publicOnlyLookup() } });
  const service = new ChatwootService({
    repo: new ChatwootRepo(deps.storage.db),
    instances: deps.instances,
    sending: deps.sending,
    sessions: deps.sessions,
    messages: deps.messages,
    media: deps.media,
    clock: deps.clock,
    log: deps.log,
    userAgent: `Waygate/${VERSION}`,
    apiPrefix: API_PREFIX,
    ...(guarded ? { targetGuard: (url: string) => nonPublicTarget(new URL(url)), dispatcher: guarded } : {}),
  });
  // Loaded before any event is stored: the sink's wants() reads this cache.
  await service.load();
  deps.instances.onDeletion({ instanceDeleted: (id) => service.forget(id) });
  deps.bus.addDurableSink(
    new ChatwootSink(service, {
      maxAttempts: null,
      baseDelayMs: deps.config.channels.retryBaseMs,
      maxDelayMs: deps.config.channels.retryMaxMs,
    }),
  );
  new Gauge({
    name: 'waygate_chatwoot_failing_instances',
    help: 'Instances whose last call to Chatwoot failed (their events wait in the outbox and are retried).',
    registers: [deps.metrics],
    collect() {
      this.set(service.failing());
    },
  });
  return {
    name: 'chatwoot',
    routes: [chatwootRoutes(service)],
    stop: async () => {
      await service.settled();
      await guarded?.close();
    },
  };
};
