// Figure 5: the same route served three times from one process — behind the full auth + rate-limit
// chain with the token cache, the same chain without the cache (before/after), and open with a
// no-op limit store (the baseline).
import { pino } from 'pino';
import { loadConfig } from '../dist/config.js';
import { systemClock } from '../dist/clock.js';
import { buildApp } from '../dist/http/app.js';
import { MemoryWindowStore } from '../dist/http/rate-limit.js';
import { InstanceRepo } from '../dist/instance-registry/repo.js';
import { InstanceService } from '../dist/instance-registry/service.js';
import { openStorage } from '../dist/storage/db.js';

const config = loadConfig({
  DATA_DIR: process.env.DATA_DIR,
  LOG_LEVEL: 'silent',
  RATE_LIMIT_PER_IP: '10000000',
  RATE_LIMIT_PER_KEY: '10000000',
});
const storage = await openStorage(config.databaseUrl);
const repo = new InstanceRepo(storage.db);
const cached = new InstanceService(repo, systemClock, 60, { size: 10_000, ttlSeconds: 30 });
const uncached = new InstanceService(repo, systemClock, 60, { size: 0, ttlSeconds: 30 });
const { instance, token } = await cached.create({ instanceName: 'bench-auth' });

function echoRoute(access) {
  return async (app) => {
    app.get('/bench/echo', { config: { access } }, async (request) => ({ ok: true, instance: request.instance?.id ?? instance.id }));
  };
}
const noLimits = { hit: async () => ({ allowed: true, remaining: 1, retryAfter: 0 }) };
const common = { config, clock: systemClock, adminKey: 'bench-admin-key-0123456789abcdef', logger: pino({ level: 'silent' }) };
const apps = [
  [
    await buildApp({ ...common, instances: cached, rateLimitStore: new MemoryWindowStore(), routes: [echoRoute('instance')] }),
    process.env.PORT_GUARDED,
  ],
  [
    await buildApp({ ...common, instances: uncached, rateLimitStore: new MemoryWindowStore(), routes: [echoRoute('instance')] }),
    process.env.PORT_UNCACHED,
  ],
  [await buildApp({ ...common, instances: cached, rateLimitStore: noLimits, routes: [echoRoute('none')] }), process.env.PORT_OPEN],
];
for (const [app, port] of apps) await app.listen({ port: Number(port), host: '127.0.0.1' });
console.log(JSON.stringify({ ready: true, token }));
