/** Operations: gateway stats, failover groups (list, create, delete) and alerts (open ones, acknowledge, rules). */
import { useEffect, useState } from 'preact/hooks';
import { ALERT_KINDS, FAILOVER_POLICIES } from '../../../src/vocabulary.js';
import { api, type Page } from '../api';
import { ActionForm, NameInput, Empty, ErrorBox, Field, SecretBox, StatusBadge, time, useAction, useCanWrite, useLoad } from '../ui';
import { loadInstances, type Instance } from './instances';

interface Stats {
  instances: { total: number; byStatus: Record<string, number>; byNetwork: Record<string, number> };
  sendsPerMinute: number;
  pendingByChannel: Record<string, number>;
  deadLetters: { total: number; byChannel: Record<string, number> };
  channels: Record<string, { up: boolean; detail?: string }>;
}

interface Member {
  instanceId: string;
  instanceName: string | null;
  status: string | null;
  health: { score: number; reasons: string[] };
  eligible: boolean;
  serving: boolean;
}

interface Group {
  groupId: string;
  name: string;
  policy: string;
  minHealth: number;
  sticky: boolean;
  members: Member[];
  serving: string | null;
}

interface Alert {
  alertId: string;
  ruleName: string;
  kind: string;
  instanceId: string | null;
  channel: string | null;
  message: string;
  firedAt: string;
  acknowledged: boolean;
}

interface Rule {
  ruleId: string;
  name: string;
  kind: string;
  threshold: number;
  forSeconds: number;
  scope: string;
  muted: boolean;
  mutedUntil: string | null;
}

function Counts({ label, counts }: { label: string; counts: Record<string, number> }) {
  const entries = Object.entries(counts);
  return (
    <div>
      <strong>{label}</strong>
      {entries.length === 0 ? (
        <p class="muted">none</p>
      ) : (
        <ul class="counts">
          {entries.map(([key, n]) => (
            <li key={key}>
              {key}: <strong>{n}</strong>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function StatsCard() {
  const stats = useLoad(() => api<Stats>('GET', '/admin/stats'));
  const s = stats.value;
  return (
    <div class="card" aria-label="Stats" data-testid="stats">
      <div class="card-head">
        <h2>Stats</h2>
        <button type="button" onClick={() => void stats.reload()}>
          Refresh
        </button>
      </div>
      <ErrorBox error={stats.error} />
      {!s && !stats.error ? <p class="loading">Loading stats…</p> : null}
      {s ? (
        <div class="stats-grid">
          <Counts label={`Instances (${s.instances.total}) by status`} counts={s.instances.byStatus} />
          <Counts label="By network" counts={s.instances.byNetwork} />
          <Counts label={`Dead letters (${s.deadLetters.total})`} counts={s.deadLetters.byChannel} />
          <Counts label="Pending per channel" counts={s.pendingByChannel} />
          <div>
            <strong>Sends per minute</strong>
            <p>{s.sendsPerMinute}</p>
          </div>
        </div>
      ) : null}
    </div>
  );
}

function GroupsCard({ canWrite }: { canWrite: boolean }) {
  const groups = useLoad(() => api<Page<Group>>('GET', '/admin/failover-groups?limit=500').then((p) => p.items));
  const [instances, setInstances] = useState<Instance[] | undefined>();
  const [instancesError, setInstancesError] = useState<unknown>(null);
  const [name, setName] = useState('');
  const [members, setMembers] = useState<string[]>([]);
  const [policy, setPolicy] = useState<string>('priority');
  const [minHealth, setMinHealth] = useState('50');
  const [secret, setSecret] = useState<{ label: string; value: string; note: string } | undefined>();

  useEffect(() => {
    if (canWrite) void loadInstances().then(setInstances, setInstancesError);
  }, [canWrite]);

  const create = useAction(async () => {
    if (members.length === 0) throw new Error('choose at least one member instance');
    const created = await api<{ groupId: string; name: string; token: string }>('POST', '/admin/failover-groups', {
      name: name.trim(),
      members,
      policy,
      minHealth: Number(minHealth),
    });
    setSecret({
      label: `Token of group ${created.name}`,
      value: created.token,
      note: 'Shown only now: send it in the apikey header of /send/* routes to send through the group.',
    });
    setName('');
    setMembers([]);
    await groups.reload();
  });
  const remove = useAction(async (group: Group) => {
    if (!window.confirm(`Delete the failover group ${group.name}? Its token stops working; the instances stay.`)) return;
    await api('DELETE', `/admin/failover-groups/${encodeURIComponent(group.groupId)}`);
    await groups.reload();
  });

  const toggle = (id: string, on: boolean) =>
    setMembers((list) => (on ? [...list.filter((m) => m !== id), id] : list.filter((m) => m !== id)));

  return (
    <div class="card">
      <h2>Failover groups</h2>
      {secret ? <SecretBox {...secret} /> : null}
      {canWrite ? (
        <ActionForm label="Create a failover group" class="" onSubmit={() => create.run()}>
          <div class="inline-form">
            <Field label="Group name">
              <NameInput name="groupName" value={name} onInput={setName} />
            </Field>
            <Field label="Policy">
              <select name="policy" value={policy} onChange={(e) => setPolicy(e.currentTarget.value)}>
                {FAILOVER_POLICIES.map((p) => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Minimum health (0 to 100)">
              <input
                name="minHealth"
                type="number"
                min={0}
                max={100}
                required
                value={minHealth}
                onInput={(e) => setMinHealth(e.currentTarget.value)}
              />
            </Field>
          </div>
          <fieldset>
            <legend>Members (in priority order of choice)</legend>
            <ErrorBox error={instancesError} />
            {instances?.length === 0 ? <Empty>No instance yet: create one on the Instances page first.</Empty> : null}
            {instances?.map((instance) => (
              <label class="check" key={instance.instanceId}>
                <input
                  type="checkbox"
                  checked={members.includes(instance.instanceId)}
                  onChange={(e) => toggle(instance.instanceId, e.currentTarget.checked)}
                />
                {instance.instanceName}
              </label>
            ))}
          </fieldset>
          <button type="submit" class="primary" disabled={create.busy}>
            Create group
          </button>
          <ErrorBox error={create.error} />
        </ActionForm>
      ) : null}
      <ErrorBox error={groups.error ?? remove.error} />
      {groups.value === undefined && !groups.error ? <p class="loading">Loading groups…</p> : null}
      {groups.value?.length === 0 ? <Empty>No failover group yet.</Empty> : null}
      {groups.value && groups.value.length > 0 ? (
        <ul class="group-list" aria-label="Failover groups">
          {groups.value.map((group) => (
            <li key={group.groupId} class="group-row" data-group={group.name}>
              <div class="card-head">
                <strong>{group.name}</strong>
                <span class="muted">
                  {group.policy}, min health {group.minHealth}
                  {group.sticky ? ', sticky' : ''}
                </span>
                {group.serving === null ? <span class="badge status-close">none eligible</span> : null}
                {canWrite ? (
                  <button type="button" class="danger" onClick={() => void remove.run(group)}>
                    Delete
                  </button>
                ) : null}
              </div>
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th>Member</th>
                      <th>Status</th>
                      <th>Health</th>
                      <th>Serving</th>
                    </tr>
                  </thead>
                  <tbody>
                    {group.members.map((m) => (
                      <tr key={m.instanceId}>
                        <td>{m.instanceName ?? m.instanceId}</td>
                        <td>{m.status ? <StatusBadge status={m.status} /> : '—'}</td>
                        <td title={m.health.reasons.join('\n')}>
                          {m.health.score}
                          {m.eligible ? '' : ' (not eligible)'}
                        </td>
                        <td>{m.serving ? <strong data-testid="serving">serving</strong> : ''}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

type AlertKind = (typeof ALERT_KINDS)[number];

/** What each kind's threshold means; kinds without one fire on the condition alone. */
const THRESHOLD_OF: Partial<Record<AlertKind, string>> = {
  health_below: 'Health score (0 to 100) below which it fires',
  dead_letters_above: 'Dead letters above which it fires',
  outbox_backlog_above: 'Events waiting for delivery above which it fires',
};

const HOUR = 3600;

function RuleForm({ onCreated }: { onCreated: () => unknown }) {
  const instances = useLoad(loadInstances);
  const groups = useLoad(() => api<Page<Group>>('GET', '/admin/failover-groups?limit=500').then((p) => p.items));
  const [name, setName] = useState('');
  const [kind, setKind] = useState<AlertKind>('instance_disconnected');
  const [threshold, setThreshold] = useState('');
  const [forSeconds, setForSeconds] = useState('60');
  const [scope, setScope] = useState<'all' | 'instance' | 'group'>('all');
  const [target, setTarget] = useState('');
  const [channel, setChannel] = useState('');
  const [webhookUrl, setWebhookUrl] = useState('');
  const [secret, setSecret] = useState<string | undefined>();
  const thresholdLabel = THRESHOLD_OF[kind];
  const scoped = kind !== 'channel_down';
  const create = useAction(async () => {
    setSecret(undefined);
    const created = await api<{ webhookSecret: string }>('POST', '/admin/alert-rules', {
      name: name.trim(),
      kind,
      webhookUrl: webhookUrl.trim(),
      ...(thresholdLabel ? { threshold: Number(threshold) } : {}),
      ...(forSeconds !== '' ? { forSeconds: Number(forSeconds) } : {}),
      ...(scoped ? { scope } : {}),
      ...(scoped && scope === 'instance' ? { instanceId: target } : {}),
      ...(scoped && scope === 'group' ? { groupId: target } : {}),
      ...(!scoped && channel.trim() ? { channel: channel.trim() } : {}),
    });
    setSecret(created.webhookSecret);
    setName('');
    await onCreated();
  });
  const targets =
    scope === 'instance'
      ? (instances.value ?? []).map((i) => ({ id: i.instanceId, label: i.instanceName }))
      : (groups.value ?? []).map((g) => ({ id: g.groupId, label: g.name }));
  return (
    <ActionForm label="Create an alert rule" class="rule-form" onSubmit={() => create.run()}>
      <h3>New rule</h3>
      {secret ? (
        <SecretBox
          label="Signing secret of the rule's notices"
          value={secret}
          note="Shown only now: the notices' X-Webhook-Signature is an HMAC-SHA256 with it."
        />
      ) : null}
      <div class="fields-row">
        <Field label="Rule name">
          <input name="ruleName" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Watches">
          <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as AlertKind)}>
            {ALERT_KINDS.map((k) => (
              <option key={k} value={k}>
                {k.replace(/_/g, ' ')}
              </option>
            ))}
          </select>
        </Field>
        {thresholdLabel ? (
          <Field label={thresholdLabel}>
            <input name="threshold" type="number" min={0} required value={threshold} onInput={(e) => setThreshold(e.currentTarget.value)} />
          </Field>
        ) : null}
        <Field label="For at least (seconds)" hint="How long the condition must hold before it fires.">
          <input name="forSeconds" type="number" min={0} value={forSeconds} onInput={(e) => setForSeconds(e.currentTarget.value)} />
        </Field>
      </div>
      <div class="fields-row">
        {scoped ? (
          <Field label="Scope">
            <select
              name="scope"
              value={scope}
              onChange={(e) => {
                setScope(e.currentTarget.value as 'all' | 'instance' | 'group');
                setTarget('');
              }}
            >
              <option value="all">every instance</option>
              <option value="instance">one instance</option>
              <option value="group">a failover group's members</option>
            </select>
          </Field>
        ) : (
          <Field label="Channel (optional)" hint="webhook, amqp, redis, nats, mqtt…; empty: any channel.">
            <input name="channel" value={channel} onInput={(e) => setChannel(e.currentTarget.value)} />
          </Field>
        )}
        {scoped && scope !== 'all' ? (
          <Field label={scope === 'instance' ? 'Instance' : 'Failover group'}>
            <select name="target" required value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
              <option value="">choose…</option>
              {targets.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.label}
                </option>
              ))}
            </select>
          </Field>
        ) : null}
        <Field label="Notify (webhook URL)" hint="Receives a signed notice when an alert fires and when it resolves.">
          <input name="webhookUrl" type="url" required value={webhookUrl} onInput={(e) => setWebhookUrl(e.currentTarget.value)} />
        </Field>
      </div>
      <button type="submit" class="primary" disabled={create.busy}>
        Create rule
      </button>
      <ErrorBox error={create.error ?? instances.error ?? groups.error} />
    </ActionForm>
  );
}

function AlertsCard({ canWrite }: { canWrite: boolean }) {
  const alerts = useLoad(() => api<Page<Alert>>('GET', '/admin/alerts?status=open&limit=200').then((p) => p.items));
  const rules = useLoad(() => api<Page<Rule>>('GET', '/admin/alert-rules?limit=500').then((p) => p.items));
  const ack = useAction(async (alert: Alert) => {
    await api('POST', `/admin/alerts/${encodeURIComponent(alert.alertId)}/acknowledge`);
    await alerts.reload();
  });
  const mute = useAction(async (rule: Rule, seconds: number) => {
    await api('POST', `/admin/alert-rules/${encodeURIComponent(rule.ruleId)}/mute`, { seconds });
    await rules.reload();
  });
  const remove = useAction(async (rule: Rule) => {
    if (!window.confirm(`Delete the rule ${rule.name}? Its alerts go with it.`)) return;
    await api('DELETE', `/admin/alert-rules/${encodeURIComponent(rule.ruleId)}`);
    await Promise.all([rules.reload(), alerts.reload()]);
  });
  return (
    <div class="card">
      <div class="card-head">
        <h2>Open alerts</h2>
        <button type="button" onClick={() => void Promise.all([alerts.reload(), rules.reload()])}>
          Refresh alerts
        </button>
      </div>
      <ErrorBox error={alerts.error ?? ack.error} />
      {alerts.value === undefined && !alerts.error ? <p class="loading">Loading alerts…</p> : null}
      {alerts.value?.length === 0 ? <Empty>No open alert.</Empty> : null}
      {alerts.value && alerts.value.length > 0 ? (
        <ul class="list" aria-label="Open alerts">
          {alerts.value.map((alert) => (
            <li key={alert.alertId} class="dead-letter" data-alert-rule={alert.ruleName} data-alert-id={alert.alertId}>
              <span>
                <strong>{alert.ruleName}</strong> ({alert.kind}) {alert.message}
                <small class="muted"> since {time(alert.firedAt)}</small>
              </span>
              {alert.acknowledged ? (
                <span class="muted">acknowledged</span>
              ) : canWrite ? (
                <button type="button" disabled={ack.busy} onClick={() => void ack.run(alert)}>
                  Acknowledge
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      <h2 class="section-head">Alert rules</h2>
      <ErrorBox error={rules.error ?? mute.error ?? remove.error} />
      {rules.value === undefined && !rules.error ? <p class="loading">Loading rules…</p> : null}
      {rules.value?.length === 0 ? <Empty>No alert rule yet.</Empty> : null}
      {rules.value && rules.value.length > 0 ? (
        <div class="table-wrap">
          <table aria-label="Alert rules">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Threshold</th>
                <th>Scope</th>
                <th>Muted</th>
                {canWrite ? <th>Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {rules.value.map((rule) => (
                <tr key={rule.ruleId}>
                  <td>{rule.name}</td>
                  <td>{rule.kind}</td>
                  <td>
                    {rule.threshold}
                    {rule.forSeconds > 0 ? ` for ${rule.forSeconds}s` : ''}
                  </td>
                  <td>{rule.scope}</td>
                  <td>{rule.muted ? (rule.mutedUntil ? `until ${time(rule.mutedUntil)}` : 'yes') : 'no'}</td>
                  {canWrite ? (
                    <td>
                      <div class="actions">
                        <button type="button" disabled={mute.busy} onClick={() => void mute.run(rule, rule.muted ? 0 : HOUR)}>
                          {rule.muted ? 'Unmute' : 'Mute 1 h'}
                        </button>
                        <button type="button" class="danger" onClick={() => void remove.run(rule)}>
                          Delete rule
                        </button>
                      </div>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {canWrite ? <RuleForm onCreated={() => rules.reload()} /> : null}
    </div>
  );
}

export function OperationsPage() {
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>Operations</h1>
      {canWrite ? null : <p class="muted">Read-only: viewers see the state but cannot change it.</p>}
      <StatsCard />
      <GroupsCard canWrite={canWrite} />
      <AlertsCard canWrite={canWrite} />
    </section>
  );
}
