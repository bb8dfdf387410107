/** Tables of the alerts module: alert_rules, alert_conditions, alerts, alert_notices. */
import type { Kysely, Selectable } from 'kysely';
import type { AlertRulesTable, AlertsTable, Database } from '../../storage/schema.js';

export type AlertRuleRow = Selectable<AlertRulesTable>;
export type AlertRow = Selectable<AlertsTable>;

export interface NoticeToSend {
  id: string;
  alertId: string;
  kind: string;
  body: string;
  attempts: number;
  nextAttemptAt: number;
  url: string;
  secret: string;
  /** The admin key created the rule: its notices may reach private addresses. */
  adminSet: boolean;
}

export interface AlertFilter {
  status?: 'open' | 'resolved' | undefined;
  ruleId?: string | undefined;
  instanceId?: string | undefined;
}

/** PostgreSQL answers bigint columns as strings. */
function numeric<T extends Record<string, unknown>>(row: T, keys: (keyof T)[]): T {
  const out = { ...row };
  for (const key of keys) if (out[key] !== null && out[key] !== undefined) out[key] = Number(out[key]) as T[keyof T];
  return out;
}

const RULE_NUMBERS: (keyof AlertRuleRow)[] = ['threshold', 'for_ms', 'muted_until', 'created_at', 'updated_at'];
const ALERT_NUMBERS: (keyof AlertRow)[] = ['value', 'notified', 'fired_at', 'resolved_at', 'acknowledged_at'];

export class AlertRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insertRule(row: AlertRuleRow): Promise<void> {
    await this.db.insertInto('alert_rules').values(row).execute();
  }

  async rules(offset: number, limit: number): Promise<{ items: AlertRuleRow[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.db.selectFrom('alert_rules').selectAll().orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute(),
      this.db
        .selectFrom('alert_rules')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map((r) => numeric(r, RULE_NUMBERS)), total: Number(count.n) };
  }

  async allRules(): Promise<AlertRuleRow[]> {
    return (await this.db.selectFrom('alert_rules').selectAll().orderBy('created_at').execute()).map((r) => numeric(r, RULE_NUMBERS));
  }

  async rule(id: string): Promise<AlertRuleRow | undefined> {
    const row = await this.db.selectFrom('alert_rules').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? numeric(row, RULE_NUMBERS) : undefined;
  }

  async deleteRule(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('alert_rules').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async setMutedUntil(id: string, until: number | null, at: number): Promise<void> {
    await this.db.updateTable('alert_rules').set({ muted_until: until, updated_at: at }).where('id', '=', id).execute();
  }

  /** Whether a failover group exists (admin/failover owns the table; alerts only read it). */
  async groupExists(groupId: string): Promise<boolean> {
    return (await this.db.selectFrom('failover_groups').select('id').where('id', '=', groupId).executeTakeFirst()) !== undefined;
  }

  /** The member instances of a failover group, now (empty once the group is deleted). */
  async groupMembers(groupId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('failover_group_members')
      .select('instance_id')
      .where('group_id', '=', groupId)
      .orderBy('position')
      .execute();
    return rows.map((row) => row.instance_id);
  }

  /** Subjects whose condition holds, with the time it was first seen holding. */
  async conditions(ruleId: string): Promise<Map<string, number>> {
    const rows = await this.db.selectFrom('alert_conditions').select(['subject', 'since']).where('rule_id', '=', ruleId).execute();
    return new Map(rows.map((row) => [row.subject, Number(row.since)]));
  }

  async addCondition(ruleId: string, subject: string, since: number): Promise<void> {
    await this.db
      .insertInto('alert_conditions')
      .values({ rule_id: ruleId, subject, since })
      .onConflict((oc) => oc.columns(['rule_id', 'subject']).doNothing())
      .execute();
  }

  async clearCondition(ruleId: string, subject: string): Promise<void> {
    await this.db.deleteFrom('alert_conditions').where('rule_id', '=', ruleId).where('subject', '=', subject).execute();
  }

  async openAlerts(ruleId: string): Promise<AlertRow[]> {
    const rows = await this.db.selectFrom('alerts').selectAll().where('rule_id', '=', ruleId).where('status', '=', 'open').execute();
    return rows.map((r) => numeric(r, ALERT_NUMBERS));
  }

  /** Records an alert, and its fired notice when one is due, in one transaction. */
  async fire(alert: AlertRow, notice: { id: string; body: string; at: number } | undefined): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('alerts').values(alert).execute();
      if (notice)
        await trx
          .insertInto('alert_notices')
          .values(newNotice(notice, alert.id, 'fired'))
          .execute();
    });
  }

  /** Queues the fired notice of an alert recorded while its rule was muted. */
  async notifyLate(alertId: string, notice: { id: string; body: string; at: number }): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('alerts').set({ notified: 1 }).where('id', '=', alertId).execute();
      await trx
        .insertInto('alert_notices')
        .values(newNotice(notice, alertId, 'fired'))
        .execute();
    });
  }

  /** Resolves an alert, with its resolved notice when one is due, in one transaction. */
  async resolve(alertId: string, at: number, notice: { id: string; body: string; at: number } | undefined): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('alerts').set({ status: 'resolved', resolved_at: at }).where('id', '=', alertId).execute();
      if (notice)
        await trx
          .insertInto('alert_notices')
          .values(newNotice(notice, alertId, 'resolved'))
          .execute();
    });
  }

  async acknowledge(alertId: string, at: number): Promise<void> {
    await this.db
      .updateTable('alerts')
      .set({ acknowledged_at: at })
      .where('id', '=', alertId)
      .where('acknowledged_at', 'is', null)
      .execute();
  }

  async alert(id: string): Promise<(AlertRow & { rule_name: string; kind: string }) | undefined> {
    const row = await this.db
      .selectFrom('alerts as a')
      .innerJoin('alert_rules as r', 'r.id', 'a.rule_id')
      .selectAll('a')
      .select(['r.name as rule_name', 'r.kind'])
      .where('a.id', '=', id)
      .executeTakeFirst();
    return row ? numeric(row, ALERT_NUMBERS) : undefined;
  }

  async alerts(filter: AlertFilter, offset: number, limit: number) {
    let query = this.db.selectFrom('alerts as a').innerJoin('alert_rules as r', 'r.id', 'a.rule_id');
    if (filter.status) query = query.where('a.status', '=', filter.status);
    if (filter.ruleId) query = query.where('a.rule_id', '=', filter.ruleId);
    if (filter.instanceId) query = query.where('a.instance_id', '=', filter.instanceId);
    const [rows, count] = await Promise.all([
      query
        .selectAll('a')
        .select(['r.name as rule_name', 'r.kind'])
        .orderBy('a.fired_at', 'desc')
        .orderBy('a.id')
        .offset(offset)
        .limit(limit)
        .execute(),
      query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map((r) => numeric(r, ALERT_NUMBERS)), total: Number(count.n) };
  }

  /** Notices still to deliver, oldest first, with where to send them. */
  async pendingNotices(limit: number): Promise<NoticeToSend[]> {
    const rows = await this.db
      .selectFrom('alert_notices as n')
      .innerJoin('alerts as a', 'a.id', 'n.alert_id')
      .innerJoin('alert_rules as r', 'r.id', 'a.rule_id')
      .select([
        'n.id',
        'n.alert_id',
        'n.kind',
        'n.body',
        'n.attempts',
        'n.next_attempt_at',
        'r.webhook_url',
        'r.secret',
        'r.webhook_admin_set',
      ])
      .where('n.status', '=', 'pending')
      .orderBy('n.created_at')
      .orderBy('n.id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      alertId: row.alert_id,
      kind: row.kind,
      body: row.body,
      attempts: row.attempts,
      nextAttemptAt: Number(row.next_attempt_at),
      url: row.webhook_url,
      secret: row.secret,
      adminSet: Number(row.webhook_admin_set) === 1,
    }));
  }

  async noticeDelivered(id: string, attempts: number, status: number | null, at: number): Promise<void> {
    await this.db
      .updateTable('alert_notices')
      .set({ status: 'delivered', attempts, last_status: status, last_error: null, delivered_at: at })
      .where('id', '=', id)
      .execute();
  }

  async noticeFailed(
    id: string,
    attempts: number,
    status: number | null,
    error: string,
    nextAttemptAt: number,
    final: boolean,
  ): Promise<void> {
    await this.db
      .updateTable('alert_notices')
      .set({ status: final ? 'failed' : 'pending', attempts, last_status: status, last_error: error, next_attempt_at: nextAttemptAt })
      .where('id', '=', id)
      .execute();
  }

  /** The notices of one alert (its view shows whether they went out). */
  async notices(alertId: string) {
    const rows = await this.db
      .selectFrom('alert_notices')
      .select(['kind', 'status', 'attempts', 'last_status', 'last_error', 'delivered_at'])
      .where('alert_id', '=', alertId)
      .orderBy('created_at')
      .execute();
    return rows.map((row) => ({ ...row, delivered_at: row.delivered_at === null ? null : Number(row.delivered_at) }));
  }
}

function newNotice(notice: { id: string; body: string; at: number }, alertId: string, kind: 'fired' | 'resolved') {
  return {
    id: notice.id,
    alert_id: alertId,
    kind,
    body: notice.body,
    status: 'pending',
    attempts: 0,
    next_attempt_at: notice.at,
    last_status: null,
    last_error: null,
    created_at: notice.at,
    delivered_at: null,
  };
}
