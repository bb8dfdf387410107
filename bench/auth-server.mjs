// Figure 5: the same route served twice from one process — once behind the full auth + rate-limit
// chain (per-IP limit, token lookup by hash, per-key limit), once open with a no-op limit store.
import { pino } from 'pino';
import { loadConfig } from '../dist/config.js';
import { systemClock } from '../dist/clock.js';
import { buildApp } from '../dist/http/app.js';
import { MemoryWindowStore } from '../dist/http/rate-limit.js';
import { InstanceRepo } from '../dist/instances/repo.js';
import { InstanceService } from '../dist/instances/service.js';
import { openStorage } from '../dist/storage/db.js';

const config = loadConfig({ DATA_DIR: process.env.DATA_DIR, LOG_LEVEL: 'silent', RATE_LIMIT_PER_IP: '100000000', RATE_LIMIT_PER_KEY: '100000000' });
const storage = await openStorage(config.databaseUrl);
const instances = new InstanceService(new InstanceRepo(storage.db), systemClock, 60);
const { instance, token } = await instances.create({ instanceName: 'bench-auth' });

function echoRoute(access) {
  return async (app) => {
    app.get('/bench/echo', { config: { access } }, async (request) => ({ ok: true, instance: request.instance?.id ?? instance.id }));
  };
}
const noLimits = { hit: async () => ({ allowed: true, remaining: 1, retryAfter: 0 }) };
const common = { config, clock: systemClock, adminKey: 'bench-admin-key-0123456789abcdef', instances, logger: pino({ level: 'silent' }) };
const guarded = await buildApp({ ...common, rateLimitStore: new MemoryWindowStore(), routes: [echoRoute('instance')] });
const open = await buildApp({ ...common, rateLimitStore: noLimits, routes: [echoRoute('none')] });
await guarded.listen({ port: Number(process.env.PORT_GUARDED), host: '127.0.0.1' });
await open.listen({ port: Number(process.env.PORT_OPEN), host: '127.0.0.1' });
console.log(JSON.stringify({ ready: true, token }));
