/** Operations: gateway stats, failover groups (list, create, delete) and alerts (open ones, acknowledge, rules). */
import { useEffect, useState } from 'preact/hooks';
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

const POLICIES = ['priority', 'round-robin', 'least-loaded'] as const;

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
                {POLICIES.map((p) => (
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

function AlertsCard({ canWrite }: { canWrite: boolean }) {
  const alerts = useLoad(() => api<Page<Alert>>('GET', '/admin/alerts?status=open&limit=200').then((p) => p.items));
  const rules = useLoad(() => api<Page<Rule>>('GET', '/admin/alert-rules?limit=500').then((p) => p.items));
  const ack = useAction(async (alert: Alert) => {
    await api('POST', `/admin/alerts/${encodeURIComponent(alert.alertId)}/acknowledge`);
    await alerts.reload();
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
      <h2>Alert rules</h2>
      <ErrorBox error={rules.error} />
      {rules.value === undefined && !rules.error ? <p class="loading">Loading rules…</p> : null}
      {rules.value?.length === 0 ? <Empty>No alert rule. Rules are created through the API (docs/operations.md).</Empty> : null}
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
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
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
