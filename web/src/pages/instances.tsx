/** The instance list (live status), creating, deleting and rotating tokens. */
import { useEffect, useState } from 'preact/hooks';
import { api, instanceTokens, rotateInstanceToken, type Page } from '../api';
import { onEvent } from '../events';
import { ActionForm, NameInput, Empty, ErrorBox, Field, HealthBadge, SecretBox, StatusBadge, useAction, useCanWrite } from '../ui';

export interface Instance {
  instanceId: string;
  instanceName: string;
  network: 'whatsapp' | 'sandbox';
  status: string;
  number: string | null;
  webhookUrl: string | null;
  webhookEvents: 'ALL' | string[];
  proxyUrl: string | null;
  createdAt: string;
  /** 0 to 100, with what lowered it (GET /instance/all gives it when health scoring is on). */
  health?: { score: number; reasons: string[] };
}

export async function loadInstances(): Promise<Instance[]> {
  return (await api<Page<Instance>>('GET', '/instance/all?limit=500')).items;
}

/** After a burst of CONNECTION events, the list is fetched once more (health scores move with the status). */
const RELOAD_AFTER_MS = 250;

/**
 * Keeps a list of instances current: each CONNECTION event updates the status and number at once,
 * and the list is fetched again shortly after (for the health score, which events do not carry).
 */
export function useLiveInstances() {
  const [items, setItems] = useState<Instance[] | undefined>();
  const [error, setError] = useState<unknown>(null);
  const reload = () => loadInstances().then(setItems, setError);
  useEffect(() => {
    void reload();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = onEvent((event) => {
      if (event.event !== 'CONNECTION') return;
      const status = typeof event.data.status === 'string' ? event.data.status : undefined;
      const number = typeof event.data.number === 'string' ? event.data.number : undefined;
      setItems((list) =>
        list?.map((i) => (i.instanceId === event.instanceId ? { ...i, ...(status ? { status } : {}), ...(number ? { number } : {}) } : i)),
      );
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), RELOAD_AFTER_MS);
    });
    return () => {
      clearTimeout(timer);
      stop();
    };
  }, []);
  return { items, error, reload, setItems };
}

export function InstancesPage() {
  const canWrite = useCanWrite();
  const { items, error, reload } = useLiveInstances();
  const [name, setName] = useState('');
  const [network, setNetwork] = useState<'sandbox' | 'whatsapp'>('sandbox');
  const [secret, setSecret] = useState<{ label: string; value: string; note: string } | undefined>();

  const create = useAction(async () => {
    const created = await api<{ instanceId: string; token: string }>('POST', '/instance/create', { instanceName: name.trim(), network });
    instanceTokens.set(created.instanceId, created.token);
    setSecret({
      label: `Token of ${name.trim()}`,
      value: created.token,
      note: 'Shown only now. Your integration sends it in the apikey header. This browser tab keeps it until you sign out.',
    });
    setName('');
    await reload();
  });
  const remove = useAction(async (instance: Instance) => {
    if (!window.confirm(`Delete ${instance.instanceName}? Its session, tokens, undelivered events and dead letters go with it.`)) return;
    await api('DELETE', `/instance/delete/${encodeURIComponent(instance.instanceId)}`);
    instanceTokens.forget(instance.instanceId);
    await reload();
  });
  const rotate = useAction(async (instance: Instance) => {
    if (!window.confirm(`Issue a new token for ${instance.instanceName}? The old one keeps working for the grace period, then stops.`))
      return;
    const rotated = await rotateInstanceToken(instance.instanceId);
    setSecret({
      label: `New token of ${instance.instanceName}`,
      value: rotated.token,
      note: `Shown only now. The previous token works until ${rotated.oldTokenValidUntil ? new Date(rotated.oldTokenValidUntil).toLocaleString() : 'now'}.`,
    });
  });

  return (
    <section>
      <h1>Instances</h1>
      {secret ? <SecretBox {...secret} /> : null}
      {canWrite ? (
        <ActionForm label="Create an instance" class="card inline-form" onSubmit={() => create.run()}>
          <Field label="Name">
            <NameInput name="instanceName" value={name} onInput={setName} />
          </Field>
          <Field label="Network">
            <select name="network" value={network} onChange={(e) => setNetwork(e.currentTarget.value as 'sandbox' | 'whatsapp')}>
              <option value="sandbox">Sandbox (simulated, no phone needed)</option>
              <option value="whatsapp">WhatsApp</option>
            </select>
          </Field>
          <button type="submit" class="primary" disabled={create.busy}>
            Create instance
          </button>
          <ErrorBox error={create.error} />
        </ActionForm>
      ) : null}
      <ErrorBox error={error ?? remove.error ?? rotate.error} />
      {items === undefined && !error ? <p class="loading">Loading instances…</p> : null}
      {items?.length === 0 ? (
        <Empty>No instance yet. Create one above: a sandbox instance lets you try everything without a phone.</Empty>
      ) : null}
      {items && items.length > 0 ? (
        <ul class="instance-list" aria-label="Instances">
          {items.map((instance) => (
            <li
              key={instance.instanceId}
              class="card instance-row"
              data-instance={instance.instanceName}
              data-instance-id={instance.instanceId}
            >
              <div class="instance-main">
                <a href={`/instances/${encodeURIComponent(instance.instanceId)}`} class="instance-name">
                  {instance.instanceName}
                </a>
                <StatusBadge status={instance.status} />
                <span class="muted">{instance.network}</span>
                <span class="muted">{instance.number ? `+${instance.number}` : 'no number linked'}</span>
                {instance.health ? <HealthBadge health={instance.health} /> : null}
              </div>
              {canWrite ? (
                <div class="actions">
                  <a class="button" href={`/instances/${encodeURIComponent(instance.instanceId)}?tab=connect`}>
                    Open
                  </a>
                  <button type="button" onClick={() => void rotate.run(instance)}>
                    Rotate token
                  </button>
                  <button type="button" class="danger" onClick={() => void remove.run(instance)}>
                    Delete
                  </button>
                </div>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
