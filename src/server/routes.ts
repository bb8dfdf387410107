/** /server/ok liveness and /server/ready readiness (no key). */
import { Type } from 'typebox';
import { errorResponsesOf } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';

export interface HealthSource {
  version: string;
  startedAt: number;
  channels(): Record<string, { up: boolean; detail?: string }>;
  role(): 'active' | 'standby';
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  storage(): Promise<void>;
}

/** How long the readiness probe waits for the database before calling it down. */
const STORAGE_PROBE_MS = 2_000;

async function storageState(health: HealthSource): Promise<{ up: boolean; detail?: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      health.storage(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${STORAGE_PROBE_MS} ms`)), STORAGE_PROBE_MS);
      }),
    ]);
    return { up: true };
  } catch (error) {
    return { up: false, detail: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** No key and no input: the only refusal is the per-address rate limit. */
const RATE_LIMITED = { 429: errorResponsesOf([429])[429]! };

const ChannelStates = Type.Record(Type.String(), Type.Object({ up: Type.Boolean(), detail: Type.Optional(Type.String()) }));
const Readiness = Type.Object({
  ready: Type.Boolean({ description: 'true: this process can take requests (storage up and active role)' }),
  role: Type.Enum(['active', 'standby'] as const),
  storage: Type.Object({ up: Type.Boolean(), detail: Type.Optional(Type.String()) }),
  channels: ChannelStates,
  degraded: Type.Boolean({ description: 'true when a configured event channel is down (its events wait in the outbox)' }),
});

export function serverRoutes(health: HealthSource): RoutePlugin {
  return async (app) => {
    app.get(
      '/server/ok',
      {
        schema: {
          tags: ['server'],
          summary: 'Liveness',
          description:
            'No key needed. `channels` shows each configured event channel and whether it is connected. `role` is `active` for the process that holds sessions and delivers events for its database, `standby` for one waiting to take over (PostgreSQL; see the description of the API).',
          response: {
            200: Type.Object({
              status: Type.Literal('ok'),
              version: Type.String(),
              uptimeSeconds: Type.Integer(),
              role: Type.Enum(['active', 'standby'] as const),
              channels: ChannelStates,
            }),
            ...RATE_LIMITED,
          },
        },
      },
      async () => ({
        status: 'ok' as const,
        version: health.version,
        uptimeSeconds: Math.floor((Date.now() - health.startedAt) / 1000),
        role: health.role(),
        channels: health.channels(),
      }),
    );

    app.get(
      '/server/ready',
      {
        schema: {
          tags: ['server'],
          summary: 'Readiness',
          description:
            'No key needed; for load balancers and orchestrators. 200 when this process can take requests: its database answers (within 2 s) and it is the `active` process. 503 with the same body when not (database down, or a standby). A configured event channel that is down does not make the process unready — its events wait in the outbox and go out when it is back — but sets `degraded: true`, and `channels` says which.',
          security: [],
          response: { 200: Readiness, 503: Readiness, ...RATE_LIMITED },
        },
      },
      async (_request, reply) => {
        const storage = await storageState(health);
        const channels = health.channels();
        const role = health.role();
        const ready = storage.up && role === 'active';
        return reply
          .code(ready ? 200 : 503)
          .send({ ready, role, storage, channels, degraded: Object.values(channels).some((channel) => !channel.up) });
      },
    );
  };
}
