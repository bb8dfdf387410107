/** Backfill: paced re-delivery of archived and live events, resumed after a restart (docs/operations.md). */
import type { ModuleFactory } from '../../modules.js';
import { BackfillRepo } from './repo.js';
import { backfillRoutes } from './routes.js';
import { BackfillService } from './service.js';

export const backfillModule: ModuleFactory = (deps) => {
  const backfill = new BackfillService({
    repo: new BackfillRepo(deps.storage.db),
    outbox: deps.outbox,
    dispatcher: deps.dispatcher,
    instances: deps.instances,
    clock: deps.clock,
    defaultRate: deps.config.admin.backfillRatePerSecond,
    log: deps.log,
  });
  return {
    name: 'backfill',
    routes: [backfillRoutes(backfill)],
    // Jobs run in the active process only; start resumes the unfinished ones.
    start: () => backfill.start(),
    standDown: () => backfill.standDown(),
    stop: () => backfill.stop(),
  };
};
