/** The MCP server module: /mcp (outside /api/v1), its acting-key resolver and its event hook. */
import type { ModuleFactory } from '../modules.js';
import type { RoutePlugin } from '../http/types.js';
import { AdminActingKeys, GatewayRest } from './rest.js';
import { mcpRoutes } from './routes.js';
import { McpService } from './service.js';

/** Media up to this size is embedded in tool results (base64 inflates it by a third). */
const EMBED_MAX_BYTES = 4 * 1_048_576;

export const mcpModule: ModuleFactory = (deps) => {
  const keys = new AdminActingKeys();
  // An admin acting on an instance through the instance routes (rest.ts).
  deps.resolvers.instance.push((key) => {
    const instanceId = keys.instanceIdOf(key);
    return instanceId === undefined ? undefined : deps.instances.get(instanceId);
  });
  const rest = new GatewayRest(keys);
  const service = new McpService({
    rest,
    config: deps.config.mcp,
    log: deps.log,
    now: () => deps.clock.now(),
    embedMaxBytes: EMBED_MAX_BYTES,
  });
  // Every event in its instance's order, whatever the instance's webhook filter keeps.
  deps.sessions.beforeQueue((instanceId, event) => service.onEvent(instanceId, event));
  const routes: RoutePlugin = async (app) => {
    // The tools call the REST routes of this same app in process.
    rest.attach(app);
    await app.register(
      mcpRoutes({
        service,
        config: deps.config.mcp,
        adminKey: deps.adminKey,
        instances: deps.instances,
        resolvers: deps.resolvers,
        keys,
        active: () => deps.active(),
        bodyLimitBytes: Math.max(deps.config.bodyLimitBytes, deps.config.media.bodyLimitBytes),
      }),
    );
  };
  return {
    name: 'mcp',
    rootRoutes: [routes],
    start() {
      service.start();
      return Promise.resolve();
    },
    // No standDown: MCP sessions stay in this process's memory when it stops leading. Should it lead
    // again (a lock that flapped), their clients go on. Should another process lead, the clients'
    // requests reach that one, get 404 and initialise again, and the sessions left here end once idle.
    stop: () => service.stop(),
  };
};
