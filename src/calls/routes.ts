/** /call routes: reject a ringing call, the call history, and the auto-reject setting. */
import { errorResponses, INSTANCE, Page, PagingQuery } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { CallService } from './service.js';

const tags = ['call'];
const instance = { access: 'instance' as const };
/** Call routes need a connected instance (409) whose driver handles calls (501). */
const refusals = [401, 403, 409, 501];

export function callRoutes(calls: CallService): RoutePlugin {
  return async (app) => {
    app.post(
      '/call/reject',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Reject an incoming call',
          description:
            'Rejects a call that is still ringing (`callId` = the `id` of the CALL event with status `offer`). The instance gets CALL with status `reject`. 404 unknown call, 409 no longer ringing.',
          body: S.RejectBody,
          response: { 200: S.CallSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => calls.reject(callerInstance(request), request.body.callId, request.body.from),
    );

    app.get(
      '/call/history',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Call history',
          description:
            'Incoming calls, newest first: ringing, rejected (by whom), missed or ended. The sandbox network keeps the latest 500 per instance.',
          querystring: PagingQuery,
          response: { 200: Page(S.CallSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => calls.history(callerInstance(request), request.query),
    );

    app.get(
      '/call/settings',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Auto-reject setting',
          description:
            'Whether incoming calls are rejected automatically, and the text sent to the caller then. Works whether or not the instance is connected.',
          response: { 200: S.CallSettingsSchema, ...errorResponses(401, 403) },
        },
      },
      async (request) => calls.settings(callerInstance(request)),
    );

    app.post(
      '/call/settings',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Change the auto-reject setting',
          description:
            'With `autoReject: true` every incoming call is rejected at once (CALL `offer`, then CALL `reject` with `reason: "auto_reject"`; history `rejectedBy: "auto"`), and `message`, when set, is sent to the caller as a text (SEND_MESSAGE). It acts even when the instance\'s event filter leaves CALL out. Omitting `message` keeps the current one; null removes it.',
          body: S.CallSettingsBody,
          response: { 200: S.CallSettingsSchema, ...errorResponses(401, 403) },
        },
      },
      async (request) => calls.updateSettings(callerInstance(request), request.body),
    );
  };
}
