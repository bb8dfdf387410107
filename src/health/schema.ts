import { Type } from 'typebox';
import { Health, Status } from '../instances/schema.js';

export const HealthReport = Type.Object({
  instanceId: Type.String(),
  score: Health.properties.score,
  reasons: Health.properties.reasons,
  signals: Type.Object(
    {
      status: Status,
      lastDisconnect: Type.Union([Type.String(), Type.Null()], {
        description:
          'The CONNECTION `reason` of the last change away from CONNECTED while not connected (e.g. `banned_or_blocked`, `restart_required`).',
      }),
      flaps: Type.Integer({ description: 'Times the connection was lost in the last 15 minutes.' }),
      sends: Type.Integer({ description: 'Send attempts in the last 5 minutes (requests refused for bad input not counted).' }),
      failures: Type.Integer({ description: 'Of those, failed on the way (network errors).' }),
      refusals: Type.Integer({
        description: 'Of those, refused before reaching the network (not connected, rate-limited by the network).',
      }),
      latencyMs: Type.Union([Type.Number(), Type.Null()], { description: 'Mean time of the successful sends in the window.' }),
      backlog: Type.Integer({ description: 'Events of the instance waiting for delivery, over all channels.' }),
      deadLetters: Type.Integer({ description: 'Events of the instance kept as dead letters.' }),
    },
    { description: 'The signals the score is computed from.' },
  ),
  evaluatedAt: Type.String({ format: 'date-time' }),
});
