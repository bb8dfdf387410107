/**
 * Alert rules, their periodic evaluation and the notices they send. Every rule watches subjects (an
 * instance, or a delivery channel); a subject's condition must hold for the rule's `forSeconds`
 * before an alert opens. Opening queues one signed notice; the condition ending resolves the alert
 * and queues a second one. Nothing more is sent while the condition holds, and the conditions, the
 * open alerts and the notice queue live in the database, so a restart neither repeats nor loses one.
 */
import { lookup } from 'node:dns/promises';
import { isoTimeOrNull as iso, newId, randomToken, type Clock } from '../../clock.js';
import { errors } from '../../errors.js';
import type { OutboxStore } from '../../events/outbox.js';
import type { DeadLetterService } from '../../events/dead-letter-service.js';
import type { RetryPolicy } from '../../events/sink.js';
import { backoffDelay } from '../../retry.js';
import type { WebhookSink } from '../../events/sinks/webhook.js';
import type { Instance, InstanceService } from '../../instance-registry/service.js';
import { ipLiteral, isPublicAddress } from '../../media/address.js';
import type { HealthSource } from '../../modules.js';
import type { AlertFilter, AlertRepo, AlertRow, AlertRuleRow } from './repo.js';

export { ALERT_KINDS, type AlertKind } from '../../vocabulary.js';
import type { AlertKind } from '../../vocabulary.js';

export interface NewRuleInput {
  name: string;
  kind: AlertKind;
  threshold?: number | undefined;
  forSeconds?: number | undefined;
  scope?: 'all' | 'instance' | 'group' | undefined;
  instanceId?: string | undefined;
  groupId?: string | undefined;
  channel?: string | undefined;
  webhookUrl: string;
  webhookSecret?: string | undefined;
}

interface Observation {
  subject: string;
  holds: boolean;
  instanceId: string | null;
  channel: string | null;
  value: number | null;
  message: string;
}

/** A status that means a linked instance is not talking to the network. */
const NOT_CONNECTED = new Set(['DISCONNECTED', 'CONNECTING', 'LOGGED_OUT']);
const NOTICE_PAGE = 200;
const LIST_PAGE = 500;

export interface AlertServiceDeps {
  repo: AlertRepo;
  clock: Clock;
  instances: InstanceService;
  outbox: OutboxStore;
  deadLetters: DeadLetterService;
  webhook: WebhookSink;
  channelHealth: () => Record<string, { up: boolean; detail?: string }>;
  health?: HealthSource | undefined;
  retry: RetryPolicy;
  log: { warn(obj: object, msg: string): void };
  /** WEBHOOK_ALLOW_PRIVATE_URLS: every rule's notices may reach private addresses. */
  allowPrivateUrls?: boolean;
}

export function ruleView(rule: AlertRuleRow, now: number) {
  return {
    ruleId: rule.id,
    name: rule.name,
    kind: rule.kind as AlertKind,
    threshold: rule.threshold,
    forSeconds: rule.for_ms / 1000,
    scope: rule.scope as 'all' | 'instance' | 'group',
    instanceId: rule.scope === 'instance' ? rule.scope_id : null,
    groupId: rule.scope === 'group' ? rule.scope_id : null,
    channel: rule.channel,
    webhookUrl: rule.webhook_url,
    muted: rule.muted_until !== null && rule.muted_until > now,
    mutedUntil: rule.muted_until !== null && rule.muted_until > now ? new Date(rule.muted_until).toISOString() : null,
    createdAt: new Date(rule.created_at).toISOString(),
  };
}

export function alertView(alert: AlertRow & { rule_name: string; kind: string }) {
  return {
    alertId: alert.id,
    ruleId: alert.rule_id,
    ruleName: alert.rule_name,
    kind: alert.kind as AlertKind,
    status: alert.status as 'open' | 'resolved',
    instanceId: alert.instance_id,
    channel: alert.channel,
    value: alert.value,
    message: alert.message,
    notified: alert.notified === 1,
    firedAt: new Date(alert.fired_at).toISOString(),
    resolvedAt: iso(alert.resolved_at),
    acknowledged: alert.acknowledged_at !== null,
    acknowledgedAt: iso(alert.acknowledged_at),
  };
}

/**
 * Refuses a webhook URL that is not http(s), or that names a private, loopback or otherwise
 * non-public address (by IP literal or by what the name resolves to), unless `allowPrivate`.
 */
export async function checkWebhookUrl(url: string, allowPrivate: boolean): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw errors.badRequest('webhookUrl is not a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw errors.badRequest('webhookUrl must be http:// or https://');
  if (allowPrivate) return;
  const literal = ipLiteral(parsed.hostname);
  let addresses: string[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = (await lookup(parsed.hostname, { all: true })).map((a) => a.address);
    } catch {
      throw errors.webhookUrlRefused(`webhookUrl host ${parsed.hostname} does not resolve`);
    }
  }
  if (addresses.length === 0 || addresses.some((address) => !isPublicAddress(address))) {
    throw errors.webhookUrlRefused('webhookUrl points at a private or loopback address; only the admin key itself may set such a URL');
  }
}

export class AlertService {
  constructor(private readonly deps: AlertServiceDeps) {}

  /** `byAdminKey`: the admin key itself (not a user session) asks; its URL may be private. */
  async createRule(input: NewRuleInput, byAdminKey: boolean) {
    const scope = input.scope ?? (input.instanceId !== undefined ? 'instance' : input.groupId !== undefined ? 'group' : 'all');
    if (scope === 'instance') {
      if (input.instanceId === undefined) throw errors.badRequest('scope "instance" needs instanceId');
      await this.deps.instances.get(input.instanceId);
    } else if (input.instanceId !== undefined) throw errors.badRequest('instanceId is only allowed with scope "instance"');
    if (scope === 'group') {
      if (input.groupId === undefined) throw errors.badRequest('scope "group" needs groupId');
      if (!(await this.deps.repo.groupExists(input.groupId))) throw errors.notFound('failover group');
    } else if (input.groupId !== undefined) throw errors.badRequest('groupId is only allowed with scope "group"');
    if (input.kind === 'channel_down' && scope !== 'all')
      throw errors.badRequest('channel_down rules watch channels: use scope "all" (and `channel` to pick one)');
    if (input.channel !== undefined && input.kind !== 'channel_down')
      throw errors.badRequest('channel is only allowed on channel_down rules');
    if (input.kind === 'health_below' && !this.deps.health) throw errors.badRequest('health scores are not available in this gateway');
    const needsThreshold = input.kind === 'health_below' || input.kind === 'dead_letters_above' || input.kind === 'outbox_backlog_above';
    if (needsThreshold && input.threshold === undefined) throw errors.badRequest(`${input.kind} needs threshold`);
    if (input.kind === 'health_below' && (input.threshold ?? 0) > 100)
      throw errors.badRequest('health_below threshold is a score from 0 to 100');
    await checkWebhookUrl(input.webhookUrl, byAdminKey || this.deps.allowPrivateUrls === true);
    const now = this.deps.clock.now();
    const secret = input.webhookSecret ?? randomToken();
    const row: AlertRuleRow = {
      id: newId(),
      name: input.name,
      kind: input.kind,
      threshold: needsThreshold ? input.threshold! : 0,
      for_ms: Math.round((input.forSeconds ?? 0) * 1000),
      scope,
      scope_id: scope === 'instance' ? input.instanceId! : scope === 'group' ? input.groupId! : null,
      channel: input.channel ?? null,
      webhook_url: input.webhookUrl,
      secret,
      muted_until: null,
      created_at: now,
      updated_at: now,
      webhook_admin_set: byAdminKey ? 1 : 0,
    };
    await this.deps.repo.insertRule(row);
    return { ...ruleView(row, now), webhookSecret: secret };
  }

  async listRules(offset: number, limit: number) {
    const { items, total } = await this.deps.repo.rules(offset, limit);
    const now = this.deps.clock.now();
    return { items: items.map((rule) => ruleView(rule, now)), total, offset, limit };
  }

  async getRule(id: string) {
    return ruleView(await this.ruleOrThrow(id), this.deps.clock.now());
  }

  async deleteRule(id: string) {
    if (!(await this.deps.repo.deleteRule(id))) throw errors.notFound('alert rule');
    return { deleted: true as const, ruleId: id };
  }

  /** Mutes a rule's notices for `seconds` from now (0 unmutes). Alerts are still recorded. */
  async mute(id: string, seconds: number) {
    await this.ruleOrThrow(id);
    const now = this.deps.clock.now();
    await this.deps.repo.setMutedUntil(id, seconds > 0 ? now + Math.round(seconds * 1000) : null, now);
    return this.getRule(id);
  }

  async listAlerts(filter: AlertFilter, offset: number, limit: number) {
    const { items, total } = await this.deps.repo.alerts(filter, offset, limit);
    return { items: items.map(alertView), total, offset, limit };
  }

  async getAlert(id: string) {
    const alert = await this.deps.repo.alert(id);
    if (!alert) throw errors.notFound('alert');
    const notices = await this.deps.repo.notices(id);
    return {
      ...alertView(alert),
      notices: notices.map((n) => ({
        kind: n.kind as 'fired' | 'resolved',
        status: n.status as 'pending' | 'delivered' | 'failed',
        attempts: n.attempts,
        lastStatus: n.last_status,
        lastError: n.last_error,
        deliveredAt: n.delivered_at === null ? null : new Date(n.delivered_at).toISOString(),
      })),
    };
  }

  async acknowledge(id: string) {
    if (!(await this.deps.repo.alert(id))) throw errors.notFound('alert');
    await this.deps.repo.acknowledge(id, this.deps.clock.now());
    return this.getAlert(id);
  }

  private async ruleOrThrow(id: string): Promise<AlertRuleRow> {
    const rule = await this.deps.repo.rule(id);
    if (!rule) throw errors.notFound('alert rule');
    return rule;
  }

  /** One evaluation round over every rule, then the due notices go out. */
  async evaluate(): Promise<void> {
    const rules = await this.deps.repo.allRules();
    const facts = new Facts(this.deps);
    for (const rule of rules) {
      try {
        await this.evaluateRule(rule, await this.observe(rule, facts));
      } catch (error) {
        this.deps.log.warn({ err: error, ruleId: rule.id }, 'alert rule evaluation failed');
      }
    }
    await this.deliverNotices();
  }

  private async observe(rule: AlertRuleRow, facts: Facts): Promise<Observation[]> {
    const kind = rule.kind as AlertKind;
    if (kind === 'channel_down') {
      return Object.entries(this.deps.channelHealth())
        .filter(([name]) => rule.channel === null || rule.channel === name)
        .map(([name, health]) => ({
          subject: `channel:${name}`,
          holds: !health.up,
          instanceId: null,
          channel: name,
          value: null,
          message: `channel ${name} is down${health.detail ? ` (${health.detail})` : ''}`,
        }));
    }
    const instances = await this.instancesOf(rule, facts);
    const out: Observation[] = [];
    for (const instance of instances) {
      const base = { subject: `instance:${instance.id}`, instanceId: instance.id, channel: null };
      const who = `instance ${instance.name} (${instance.id})`;
      switch (kind) {
        case 'instance_disconnected':
          // Only instances that were linked to a phone: one still pairing for the first time is not "down".
          out.push({
            ...base,
            holds: NOT_CONNECTED.has(instance.status) && (instance.number !== null || instance.status === 'LOGGED_OUT'),
            value: null,
            message: `${who} is not connected (status ${instance.status})`,
          });
          break;
        case 'health_below': {
          if (!this.deps.health) break;
          const { score, reasons } = await this.deps.health.scoreOf(instance.id);
          out.push({
            ...base,
            holds: score < rule.threshold,
            value: score,
            message: `${who} health ${score} is below ${rule.threshold}${reasons.length > 0 ? `: ${reasons.join('; ')}` : ''}`,
          });
          break;
        }
        case 'dead_letters_above': {
          const count = (await facts.deadLetters())[instance.id] ?? 0;
          out.push({
            ...base,
            holds: count > rule.threshold,
            value: count,
            message: `${who} has ${count} dead letters (more than ${rule.threshold})`,
          });
          break;
        }
        case 'outbox_backlog_above': {
          const count = (await facts.backlog())[instance.id] ?? 0;
          out.push({
            ...base,
            holds: count > rule.threshold,
            value: count,
            message: `${who} has ${count} events waiting for delivery (more than ${rule.threshold})`,
          });
          break;
        }
      }
    }
    return out;
  }

  /** The instances a rule watches: one, a failover group's members as they are now, or all. */
  private async instancesOf(rule: AlertRuleRow, facts: Facts): Promise<Instance[]> {
    if (rule.scope === 'all') return facts.instances();
    const ids = rule.scope === 'instance' ? [rule.scope_id ?? ''] : await this.deps.repo.groupMembers(rule.scope_id ?? '');
    const found = await Promise.all(ids.map((id) => this.deps.instances.find(id)));
    return found.filter((i): i is Instance => i !== undefined);
  }

  private async evaluateRule(rule: AlertRuleRow, observations: Observation[]): Promise<void> {
    const { repo, clock } = this.deps;
    const now = clock.now();
    const muted = rule.muted_until !== null && rule.muted_until > now;
    const conditions = await repo.conditions(rule.id);
    const open = new Map((await repo.openAlerts(rule.id)).map((alert) => [alert.subject, alert]));
    const holding = new Set<string>();
    for (const seen of observations) {
      if (!seen.holds) continue;
      holding.add(seen.subject);
      let since = conditions.get(seen.subject);
      if (since === undefined) {
        since = now;
        await repo.addCondition(rule.id, seen.subject, now);
      }
      if (now - since < rule.for_ms || open.has(seen.subject)) continue;
      const alert: AlertRow = {
        id: newId(),
        rule_id: rule.id,
        subject: seen.subject,
        instance_id: seen.instanceId,
        channel: seen.channel,
        status: 'open',
        value: seen.value,
        message: seen.message,
        notified: muted ? 0 : 1,
        fired_at: now,
        resolved_at: null,
        acknowledged_at: null,
      };
      await repo.fire(alert, muted ? undefined : this.notice(rule, alert, 'fired', now));
      open.set(seen.subject, alert);
    }
    // Subjects no longer holding (or gone, e.g. a deleted instance) clear their condition and resolve.
    for (const subject of conditions.keys()) if (!holding.has(subject)) await repo.clearCondition(rule.id, subject);
    for (const alert of open.values()) {
      if (!holding.has(alert.subject)) {
        // A resolved notice only follows a fired one: a muted alert ends as quietly as it began.
        const resolved = { ...alert, status: 'resolved', resolved_at: now };
        await repo.resolve(alert.id, now, alert.notified === 1 ? this.notice(rule, resolved, 'resolved', now) : undefined);
      } else if (alert.notified === 0 && !muted) {
        // The mute ended while the condition still holds: the fired notice goes now, once.
        await repo.notifyLate(alert.id, this.notice(rule, alert, 'fired', now));
      }
    }
  }

  private notice(rule: AlertRuleRow, alert: AlertRow, kind: 'fired' | 'resolved', at: number) {
    const id = newId();
    const body = JSON.stringify({
      event: kind === 'fired' ? 'ALERT_FIRED' : 'ALERT_RESOLVED',
      eventId: id,
      timestamp: new Date(at).toISOString(),
      alert: alertView({ ...alert, rule_name: rule.name, kind: rule.kind }),
      rule: ruleView(rule, at),
    });
    return { id, body, at };
  }

  /**
   * Sends due notices, oldest first. A notice waiting for its retry holds back the later notices of
   * the same alert, so a receiver never sees "resolved" before "fired".
   */
  async deliverNotices(): Promise<void> {
    const { repo, clock, webhook, retry } = this.deps;
    const held = new Set<string>();
    for (const notice of await repo.pendingNotices(NOTICE_PAGE)) {
      if (held.has(notice.alertId)) continue;
      if (notice.nextAttemptAt > clock.now()) {
        held.add(notice.alertId);
        continue;
      }
      const type = notice.kind === 'fired' ? 'ALERT_FIRED' : 'ALERT_RESOLVED';
      // Like instance webhooks: a URL not set by the admin key reaches public addresses only, checked at connect time.
      const guarded = !(this.deps.allowPrivateUrls === true || notice.adminSet);
      const result = await webhook.postSigned(notice.url, notice.secret, { body: notice.body, eventId: notice.id, type }, guarded);
      const attempts = notice.attempts + 1;
      if (result.ok) {
        await repo.noticeDelivered(notice.id, attempts, result.status, clock.now());
        continue;
      }
      const final = retry.maxAttempts !== null && attempts >= retry.maxAttempts;
      await repo.noticeFailed(
        notice.id,
        attempts,
        result.status,
        result.error ?? 'delivery failed',
        clock.now() + backoffDelay({ baseMs: retry.baseDelayMs, maxMs: retry.maxDelayMs }, attempts - 1),
        final,
      );
      if (!final) held.add(notice.alertId);
      this.deps.log.warn(
        { noticeId: notice.id, alertId: notice.alertId, attempts, error: result.error },
        final ? 'alert notice gave up' : 'alert notice failed; will retry',
      );
    }
  }
}

/** What one evaluation round reads once and shares between rules. */
class Facts {
  private all?: Promise<Instance[]>;
  private dead?: Promise<Record<string, number>>;
  private pending?: Promise<Record<string, number>>;

  constructor(private readonly deps: AlertServiceDeps) {}

  instances(): Promise<Instance[]> {
    this.all ??= (async () => {
      const out: Instance[] = [];
      for (let offset = 0; ; offset += LIST_PAGE) {
        const { items } = await this.deps.instances.list(offset, LIST_PAGE);
        out.push(...items);
        if (items.length < LIST_PAGE) return out;
      }
    })();
    return this.all;
  }

  deadLetters(): Promise<Record<string, number>> {
    this.dead ??= this.deps.deadLetters.countByInstance();
    return this.dead;
  }

  backlog(): Promise<Record<string, number>> {
    this.pending ??= this.deps.outbox.pendingByInstance();
    return this.pending;
  }
}
