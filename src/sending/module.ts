/** Sending: every /send kind, paced batches and the /message media routes. */
import type { ModuleFactory } from '../modules.js';
import { BatchRepo } from './batch-repo.js';
import { BatchService } from './batch.js';
import { messageRoutes, sendRoutes } from './routes.js';

export const sendingModule: ModuleFactory = (deps) => {
  const batches = new BatchService(
    new BatchRepo(deps.storage.db),
    deps.sending,
    deps.instances,
    deps.config.batch,
    deps.clock,
    deps.sleep,
    deps.log,
  );
  // Cluster mode: a batch runs where its instance's session is, and moves with it.
  batches.runWhere((instanceId) => deps.sessions.mayHold(instanceId));
  deps.sessions.onMove({ arrived: (id) => batches.resumeInstance(id), leaving: (id) => batches.halt(id) });
  return {
    name: 'sending',
    routes: [sendRoutes(deps.sending, batches, deps.config.media, deps.mediaAdmission), messageRoutes(deps.sending)],
    // Unfinished batches carry on where they stopped. In cluster mode each instance's batches resume
    // as it arrives (above): leading must not count a running batch's item as interrupted.
    ...(deps.config.cluster ? {} : { start: () => batches.resume() }),
    stop: () => batches.stop(),
  };
};
