/** Alert rules and alerts under /admin (admin key), and /instance/alerts (instance key). */
import { Type } from 'typebox';
import { ADMIN, errorResponses, INSTANCE, Page, PagingQuery } from '../../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../../http/types.js';
import * as S from './schema.js';
import type { AlertService } from './service.js';

const tags = ['admin'];
const admin = { access: 'admin' as const };

export function alertRoutes(alerts: AlertService): RoutePlugin {
  return async (app) => {
    app.post(
      '/admin/alert-rules',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Create an alert rule',
          description:
            'A rule watches every instance (`scope: "all"`), one (`scope: "instance"`, `instanceId`) or the members of a failover group (`scope: "group"`, `groupId`; 404 for an unknown group) — or the delivery channels for `channel_down`. Rules are evaluated every ALERT_EVAL_INTERVAL_MS by the active process. When a condition has held for `forSeconds` an alert opens and ONE notice `{"event":"ALERT_FIRED","eventId","timestamp","alert":{...},"rule":{...}}` is POSTed to `webhookUrl`, signed like instance webhooks (`X-Webhook-Signature`: hex HMAC-SHA256 of the body with the rule\'s `webhookSecret`) and retried with backoff (WEBHOOK_MAX_ATTEMPTS). When the condition ends the alert resolves and one `ALERT_RESOLVED` notice follows. A `webhookUrl` on a private or loopback address is refused (422 `webhook_url_refused`) unless the caller is the admin key itself or WEBHOOK_ALLOW_PRIVATE_URLS is set.',
          body: S.RuleBody,
          response: { 201: S.RuleCreated, ...errorResponses(401, 403, 404, 422) },
        },
      },
      async (request, reply) => reply.status(201).send(await alerts.createRule(request.body, request.adminCaller === undefined)),
    );

    app.get(
      '/admin/alert-rules',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'List alert rules',
          description: 'Every rule, oldest first, paged. Webhook secrets are never listed.',
          querystring: PagingQuery,
          response: { 200: Page(S.RuleView), ...errorResponses(401, 403) },
        },
      },
      async (request) => alerts.listRules(request.query.offset, request.query.limit),
    );

    app.get(
      '/admin/alert-rules/:rule_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Get an alert rule',
          description: 'The rule, with whether it is muted and until when. 404 for an unknown id.',
          params: S.RuleParams,
          response: { 200: S.RuleView, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => alerts.getRule(request.params.rule_id),
    );

    app.delete(
      '/admin/alert-rules/:rule_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Delete an alert rule',
          description: 'Deletes the rule with its alerts and any notice not yet delivered. 404 for an unknown id.',
          params: S.RuleParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true), ruleId: Type.String() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => alerts.deleteRule(request.params.rule_id),
    );

    app.post(
      '/admin/alert-rules/:rule_id/mute',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Mute an alert rule for a time',
          description:
            'No notice is sent for this rule for `seconds` from now (`0` unmutes). Alerts are still recorded (`notified: false`). An alert that fired while muted and still holds when the mute ends gets its ALERT_FIRED notice then; one that fired and resolved within the mute sends nothing.',
          params: S.RuleParams,
          body: S.MuteBody,
          response: { 200: S.RuleView, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => alerts.mute(request.params.rule_id, request.body.seconds),
    );

    app.get(
      '/admin/alerts',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'List alerts',
          description: 'Alerts of every rule, newest first, paged. Filter with `status` (`open` or `resolved`), `ruleId` and `instanceId`.',
          querystring: S.AlertQuery,
          response: { 200: Page(S.AlertView), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        const { offset, limit, ...filter } = request.query;
        return alerts.listAlerts(filter, offset, limit);
      },
    );

    app.get(
      '/admin/alerts/:alert_id',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Get an alert',
          description: 'The alert and the delivery state of its notices (fired, resolved). 404 for an unknown id.',
          params: S.AlertParams,
          response: { 200: S.AlertDetail, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => alerts.getAlert(request.params.alert_id),
    );

    app.post(
      '/admin/alerts/:alert_id/acknowledge',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Acknowledge an alert',
          description:
            'Marks the alert as seen by someone (`acknowledged: true`, `acknowledgedAt`); it stays open until its condition ends. Acknowledging again keeps the first time. 404 for an unknown id.',
          params: S.AlertParams,
          response: { 200: S.AlertDetail, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => alerts.acknowledge(request.params.alert_id),
    );

    app.get(
      '/instance/alerts',
      {
        config: { access: 'instance' },
        schema: {
          tags: ['instance'],
          security: INSTANCE,
          summary: 'Open alerts of this instance',
          description: 'The open alerts about the calling instance (any rule), newest first, paged.',
          querystring: PagingQuery,
          response: { 200: Page(S.AlertView), ...errorResponses(401, 403) },
        },
      },
      async (request) =>
        alerts.listAlerts({ status: 'open', instanceId: callerInstance(request).id }, request.query.offset, request.query.limit),
    );
  };
}
